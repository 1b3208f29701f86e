// What test/mappings/transform-isolation.test.ts asserts of the gateway's
// transform pool, tried on the pool and on Piscina configured as in
// bench/transform-pools.mjs (same threads, resourceLimits, env {}, maxQueue,
// and a per-call AbortSignal.timeout as its only deadline). Prints one line per
// probe and pool: kept, or what happened instead. Run after `npm run build`
// and `npm install --no-save piscina@5.3.2` (Piscina is not a dependency):
//
//   node bench/transform-pools-guarantees.mjs
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { importPiscina } from './piscina-transform-worker.mjs';

const { Piscina } = await importPiscina();

const dist = new URL('../dist', import.meta.url).pathname;
const { loadTransform, DEFAULT_TRANSFORM_LIMITS, validateAction } = await import(
  `${dist}/mappings/transforms.js`
);

// The module of test/mappings/transform-isolation.test.ts.
const MODULE = `
import { appendFileSync, writeFileSync } from 'node:fs';
export default async ({ payload }) => {
  switch (payload.do) {
    case 'loop':
      if (payload.file) writeFileSync(payload.file, 'started');
      for (;;) {}
    case 'interval':
      setInterval(() => appendFileSync(payload.file, 'x'), 5);
      return new Promise(() => {});
    case 'exit':
      process.exit(1);
    case 'timer-throw':
      setTimeout(() => { throw new Error('thrown in a timer'); }, 1);
      return new Promise(() => {});
    case 'bomb': {
      const hoard = [];
      for (;;) hoard.push({ index: hoard.length, text: 'x'.repeat(64) + hoard.length });
    }
    case 'recurse': {
      const deeper = (n) => deeper(n + 1) + 1;
      return { text: String(deeper(0)) };
    }
    case 'slow':
      await new Promise((resolve) => setTimeout(resolve, payload.ms));
      return { text: 'slow ' + payload.n };
    case 'env':
      return { text: JSON.stringify(process.env) };
    default:
      return { text: 'ok ' + payload.n };
  }
};
`;

const root = mkdtempSync(join(tmpdir(), 'agentgate-bench-guarantees-'));
const input = (payload) => ({ payload, headers: {}, query: {}, path: 'test', url: '/hooks/test' });
const outcome = (promise) =>
  promise.then(
    (value) => value,
    (error) => error,
  );
const text = (value) => (value instanceof Error ? `${value.name}: ${value.message}` : JSON.stringify(value));

/** The gateway's pool, as the tests start it. */
async function gatewayPool(limits, source = MODULE, name = 'runaway.mjs') {
  writeFileSync(join(root, name), source);
  const pool = await loadTransform(
    { transformsRoot: root, transformsDir: root, module: name },
    { timeoutMs: 400, ...limits },
  );
  return { run: (task) => pool.run(task), stop: () => pool.terminate(), retire: () => pool.retire() };
}

/** Piscina with the same limits; the call's deadline is its AbortSignal. */
async function piscinaPool(over, source = MODULE, name = 'runaway.mjs') {
  const limits = { ...DEFAULT_TRANSFORM_LIMITS, timeoutMs: 400, ...over };
  writeFileSync(join(root, name), source);
  const pool = new Piscina({
    filename: new URL('./piscina-transform-worker.mjs', import.meta.url).href,
    workerData: { dist, file: join(root, name), module: name, exportName: undefined },
    minThreads: 1,
    maxThreads: limits.workers,
    idleTimeout: 60_000,
    maxQueue: limits.maxQueued,
    resourceLimits: { ...DEFAULT_TRANSFORM_LIMITS.resourceLimits, ...limits.resourceLimits },
    env: {},
    argv: [],
    execArgv: [],
  });
  return {
    run: async (task) =>
      validateAction(await pool.run(task, { signal: AbortSignal.timeout(limits.timeoutMs) })),
    stop: () => pool.destroy(),
    retire: () => pool.close(),
    threads: () => pool.threads.length,
  };
}

const probes = {
  async 'a synchronous loop is cut off at its deadline; the next call is served'(make) {
    const pool = await make({ timeoutMs: 300 });
    const started = Date.now();
    const error = await outcome(pool.run(input({ do: 'loop' })));
    const elapsed = Date.now() - started;
    const next = await outcome(pool.run(input({ n: 1 })));
    await pool.stop();
    const kept = error instanceof Error && elapsed >= 290 && elapsed < 2000 && next?.text === 'ok 1';
    return [kept, `${text(error)} after ${elapsed} ms; next ${text(next)}`];
  },

  async 'calls queued behind a stuck worker are served (2 workers, then 1 worker)'(make) {
    const two = await make({ workers: 2, timeoutMs: 500 });
    const stuck = outcome(two.run(input({ do: 'loop' })));
    const others = await Promise.all([1, 2, 3, 4, 5].map((n) => outcome(two.run(input({ n })))));
    await stuck;
    await two.stop();
    const one = await make({ workers: 1, timeoutMs: 300, queueTimeoutMs: 3000 }, MODULE, 'single.mjs');
    const spinning = outcome(one.run(input({ do: 'loop' })));
    const queued = await Promise.all([6, 7, 8].map((n) => outcome(one.run(input({ n })))));
    await spinning;
    await one.stop();
    const all = [...others, ...queued];
    return [all.every((a) => a?.text?.startsWith('ok')), all.map(text).join('; ')];
  },

  async "a call's deadline counts from its start, not from when it was queued"(make) {
    // One worker; the second call waits 250 ms behind the first, then runs 100 ms.
    const pool = await make({ workers: 1, callsPerWorker: 1, timeoutMs: 300, queueTimeoutMs: 3000 });
    const results = await Promise.all([
      outcome(pool.run(input({ do: 'slow', ms: 250, n: 1 }))),
      outcome(pool.run(input({ do: 'slow', ms: 100, n: 2 }))),
    ]);
    await pool.stop();
    return [results.every((a) => a?.text?.startsWith('slow')), results.map(text).join('; ')];
  },

  async 'a call waiting for a worker fails on its own (shorter) queue bound'(make) {
    const pool = await make({ workers: 1, timeoutMs: 1000, queueTimeoutMs: 100 });
    const marker = join(root, `spin-${Math.random()}`);
    const stuck = outcome(pool.run(input({ do: 'loop', file: marker })));
    while (!existsSync(marker)) await sleep(10);
    await sleep(100);
    const started = Date.now();
    const waited = await outcome(pool.run(input({ n: 1 })));
    const elapsed = Date.now() - started;
    await stuck;
    await pool.stop();
    return [waited instanceof Error && elapsed < 500, `${text(waited)} after ${elapsed} ms`];
  },

  async 'an async runaway (a timer that keeps writing) stops when its call times out'(make) {
    const pool = await make({ timeoutMs: 300 });
    const file = join(root, `counter-${Math.random()}`);
    const error = await outcome(pool.run(input({ do: 'interval', file })));
    const at = existsSync(file) ? statSync(file).size : 0;
    await sleep(300);
    const later = existsSync(file) ? statSync(file).size : 0;
    await pool.stop();
    return [error instanceof Error && at > 5 && later === at, `${text(error)}; file ${at} → ${later} bytes`];
  },

  async 'process.exit fails its call at once; the next call is served'(make) {
    const pool = await make({ timeoutMs: 5000 });
    const started = Date.now();
    const error = await outcome(pool.run(input({ do: 'exit' })));
    const elapsed = Date.now() - started;
    const next = await outcome(pool.run(input({ n: 2 })));
    await pool.stop();
    return [
      error instanceof Error && elapsed < 2000 && next?.text === 'ok 2',
      `${text(error)} after ${elapsed} ms; next ${text(next)}`,
    ];
  },

  async 'an uncaught error in a timer fails the call in flight with that error'(make) {
    const pool = await make({ timeoutMs: 5000 });
    const error = await outcome(pool.run(input({ do: 'timer-throw' })));
    const next = await outcome(pool.run(input({ n: 3 })));
    await pool.stop();
    return [
      /thrown in a timer/.test(error?.message) && next?.text === 'ok 3',
      `${text(error)}; next ${text(next)}`,
    ];
  },

  async 'a heap bomb ends at the worker heap limit; the next call is served'(make) {
    const pool = await make({
      timeoutMs: 20_000,
      resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 },
    });
    const error = await outcome(pool.run(input({ do: 'bomb' })));
    const next = await outcome(pool.run(input({ n: 4 })));
    await pool.stop();
    return [
      /memory limit/i.test(error?.message) && next?.text === 'ok 4',
      `${text(error)}; next ${text(next)}`,
    ];
  },

  async 'the environment is empty'(make) {
    process.env.AGENTGATE_ISOLATION_PROBE = 'secret';
    const pool = await make({});
    const action = await outcome(pool.run(input({ do: 'env' })));
    delete process.env.AGENTGATE_ISOLATION_PROBE;
    await pool.stop();
    return [action?.text === '{}', text(action)];
  },

  async 'a module that loops at its top level fails to load within the load bound'(make) {
    const cpuBefore = process.cpuUsage();
    const started = Date.now();
    let pool;
    let result;
    try {
      pool = await make(
        { loadTimeoutMs: 300, timeoutMs: 1000 },
        'for (;;) {}\nexport default () => null;',
        'hang.mjs',
      );
      result = await outcome(pool.run(input({ n: 1 })));
    } catch (error) {
      result = error;
    }
    const elapsed = Date.now() - started;
    await sleep(500);
    const spinning = pool?.threads?.() ?? 0;
    const cpu = process.cpuUsage(cpuBefore);
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
    const stop = Date.now();
    await Promise.race([pool?.stop(), sleep(3000)]);
    const stopMs = Date.now() - stop;
    return [
      result instanceof Error && /load/.test(result.message) && elapsed < 1000,
      `${text(result)} after ${elapsed} ms; then ${spinning} thread(s), ${cpuMs} ms CPU over ${elapsed + 500} ms, stop took ${stopMs} ms`,
    ];
  },

  async 'refuses at once when maxQueued calls are waiting'(make) {
    const pool = await make({ workers: 1, maxQueued: 2, timeoutMs: 500, queueTimeoutMs: 2000 });
    const marker = join(root, `spin-${Math.random()}`);
    const stuck = outcome(pool.run(input({ do: 'loop', file: marker })));
    while (!existsSync(marker)) await sleep(10);
    await sleep(100); // silent long enough that the pool sends it nothing more
    const calls = [outcome(pool.run(input({ n: 1 }))), outcome(pool.run(input({ n: 2 })))];
    const thirdAt = Date.now();
    const third = await outcome(pool.run(input({ n: 3 })));
    const thirdMs = Date.now() - thirdAt;
    await stuck;
    const served = await Promise.all(calls);
    await pool.stop();
    return [
      third instanceof Error && thirdMs < 50 && served.every((a) => a?.text?.startsWith('ok')),
      `third ${text(third)} after ${thirdMs} ms; queued ${served.map(text).join(', ')}`,
    ];
  },

  async 'after a reload (retire), a late call is still served'(make) {
    const pool = await make({ workers: 2 });
    const slow = outcome(pool.run(input({ do: 'slow', ms: 200, n: 1 })));
    const retired = pool.retire();
    const first = await slow;
    await retired;
    const late = await outcome(pool.run(input({ n: 2 })));
    await pool.stop();
    return [first?.text === 'slow 1' && late?.text === 'ok 2', `${text(first)}; late ${text(late)}`];
  },
};

const pools = { pool: gatewayPool, piscina: piscinaPool };
let failures = 0;
try {
  for (const [name, probe] of Object.entries(probes)) {
    console.log(name);
    for (const [poolName, make] of Object.entries(pools)) {
      const [kept, what] = await probe(make);
      console.log(`  ${poolName.padEnd(8)} ${kept ? 'kept  ' : 'BROKEN'}  ${what}`);
      if (!kept && poolName === 'pool') failures++;
    }
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
process.exit(failures === 0 ? 0 : 1);
