// Calls/s of one trivial transform through the gateway's own worker pool
// (dist/mappings/transform-pool.js; run `npm run build` first) and through
// Piscina (npm `piscina`, not a dependency: `npm install --no-save piscina@5.3.2`
// first, the version docs/performance.md reports), called
// directly in this process: the HTTP around a transform is the same whichever
// pool runs it (bench/transform-throughput.mjs measures that path), so only the
// pools are measured here. Same module, same inputs, same number of callers
// each awaiting its call before the next, same threads and limits:
//
//   pool            the gateway's pool with its defaults: min(2, cores) workers, 8 calls
//                   sent ahead per worker, 5 s per call from its start, 5 s in the queue,
//                   1000 queued at most, 128 MB heap per worker, empty environment
//   piscina         Piscina with the same threads (1 started, up to 2), maxQueue 1000,
//                   resourceLimits, env {}, and each call given AbortSignal.timeout(5 s):
//                   its only way to stop a runaway (an aborted running task terminates the
//                   worker). Abortable tasks never share a worker, so one call at a time each
//   piscina-shared  as piscina, but 8 tasks per worker and no signal: no deadline and no
//                   runaway kill at all — Piscina's speed once those are given up
//
// Rounds alternate the order of the variants; the median and min–max over rounds are
// reported, with the CPU time of the gateway's thread per call (event-loop utilisation)
// and how much of the machine other processes took.
//
//   node bench/transform-pools.mjs [--rounds 5] [--duration 4] [--warmup 1] [--concurrency 32]
//                                  [--variants pool,piscina,piscina-shared] [--json <file>]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { othersCpuWindow } from './machine-load.mjs';
import { importPiscina } from './piscina-transform-worker.mjs';
import { median } from './stats.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '32' },
    variants: { type: 'string', default: 'pool,piscina,piscina-shared' },
    json: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const DURATION_MS = Number(values.duration) * 1000;
const WARMUP_MS = Number(values.warmup) * 1000;
const CONCURRENCY = Number(values.concurrency);

// The transform of bench/transform-throughput.mjs.
const TRANSFORM = `export default ({ payload }) => payload.skip ? null : { kind: 'wake', text: 'event ' + payload.n };`;
const dist = new URL('../dist', import.meta.url).pathname;
const { loadTransform, DEFAULT_TRANSFORM_LIMITS, validateAction } = await import(
  `${dist}/mappings/transforms.js`
);
const limits = DEFAULT_TRANSFORM_LIMITS;

const dir = mkdtempSync(join(tmpdir(), 'agentgate-bench-pools-'));
const file = join(dir, 'trivial.mjs');
writeFileSync(file, TRANSFORM);

/** What the gateway hands a transform for a POST to a mapped hook (visible headers only). */
const input = (n) => ({
  payload: { n },
  headers: {
    host: '127.0.0.1:18789',
    'content-type': 'application/json',
    'content-length': '9',
    'user-agent': 'bench',
    accept: '*/*',
    connection: 'keep-alive',
  },
  query: {},
  path: 'transform',
  url: '/hooks/transform',
});

function piscina(shared) {
  const pool = new Piscina({
    filename: new URL('./piscina-transform-worker.mjs', import.meta.url).href,
    workerData: { dist, file, module: 'trivial.mjs', exportName: undefined },
    minThreads: 1,
    maxThreads: limits.workers,
    idleTimeout: 60_000,
    maxQueue: limits.maxQueued,
    concurrentTasksPerWorker: shared ? limits.callsPerWorker : 1,
    resourceLimits: limits.resourceLimits,
    env: {},
    argv: [],
    execArgv: [],
  });
  return {
    // The gateway validates the worker's answer on its side too (transform-slot.ts).
    run: shared
      ? async (task) => validateAction(await pool.run(task))
      : async (task) =>
          validateAction(await pool.run(task, { signal: AbortSignal.timeout(limits.timeoutMs) })),
    stop: () => pool.destroy(),
    threads: () => pool.threads.length,
  };
}

async function gatewayPool() {
  const pool = await loadTransform({ transformsRoot: dir, transformsDir: dir, module: 'trivial.mjs' });
  return { run: (task) => pool.run(task), stop: () => pool.terminate(), threads: () => pool.size };
}

const makers = { pool: gatewayPool, piscina: () => piscina(false), 'piscina-shared': () => piscina(true) };
const names = values.variants.split(',').filter((name) => name in makers);
const { Piscina, version } = names.some((name) => name.startsWith('piscina'))
  ? await importPiscina()
  : { version: undefined };

/** CONCURRENCY callers, each issuing its next call when the previous one settled, until `until`. */
async function load(variant, until, record) {
  let n = 0;
  let failed = 0;
  const caller = async () => {
    while (performance.now() < until) {
      const start = performance.now();
      try {
        await variant.run(input(++n));
      } catch {
        failed++;
        continue;
      }
      record?.(performance.now() - start);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, caller));
  return failed;
}

async function measure(variant) {
  await load(variant, performance.now() + WARMUP_MS);
  const latencies = [];
  const others = othersCpuWindow([]);
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  const failed = await load(variant, started + DURATION_MS, (ms) => latencies.push(ms));
  const seconds = (performance.now() - started) / 1000;
  const { active } = performance.eventLoopUtilization(elu);
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    cps: latencies.length / seconds,
    p50: at(0.5),
    p99: at(0.99),
    // Milliseconds the gateway's thread was busy, per call, in microseconds.
    mainUsPerCall: (active * 1000) / Math.max(1, latencies.length),
    failed,
    threads: variant.threads(),
    othersCpu: others(),
  };
}

const variants = {};
for (const name of names) variants[name] = await makers[name]();
const samples = Object.fromEntries(names.map((name) => [name, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order, so no variant always runs first or after the same one.
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const name of order) samples[name].push(await measure(variants[name]));
  }
} finally {
  for (const variant of Object.values(variants)) await variant.stop();
  rmSync(dir, { recursive: true, force: true });
}

const f = (x, digits = 0) => x.toFixed(digits);
console.log(
  `Node ${process.version}, ${availableParallelism()} cores; ${ROUNDS} rounds of ${values.duration} s ` +
    `(after ${values.warmup} s warm-up), ${CONCURRENCY} concurrent callers` +
    (version ? `; piscina ${version}` : ''),
);
for (const name of names) {
  const list = samples[name];
  const cps = list.map((s) => s.cps);
  const others = list.map((s) => s.othersCpu).filter((x) => x !== null);
  console.log(
    `${name.padEnd(15)} ${f(median(cps)).padStart(7)} calls/s (min–max ${f(Math.min(...cps))}–${f(Math.max(...cps))}; ` +
      `rounds ${cps.map((x) => f(x)).join(', ')})  p50 ${f(median(list.map((s) => s.p50)), 2)} ms  ` +
      `p99 ${f(median(list.map((s) => s.p99)), 2)} ms  gateway thread ${f(median(list.map((s) => s.mainUsPerCall)), 1)} µs/call  ` +
      `threads ${Math.max(...list.map((s) => s.threads))}  failed ${list.reduce((a, s) => a + s.failed, 0)}` +
      (others.length ? `  others ${f(Math.min(...others))}–${f(Math.max(...others))} % of the machine` : ''),
  );
}
// Same-round ratios: a busy moment on the machine slows both variants of a round alike.
const [reference, ...rest] = names;
for (const name of rest) {
  const ratios = samples[name].map((s, i) => s.cps / samples[reference][i].cps);
  console.log(
    `${name} ÷ ${reference}: ${f(median(ratios), 2)} (rounds ${ratios.map((r) => f(r, 2)).join(', ')})`,
  );
}
if (values.json) writeFileSync(values.json, JSON.stringify({ node: process.version, samples }, null, 2));
