// What one `POST /hooks/agent` costs a gateway, in figures that do not move with the
// machine's load (docs/performance.md, "What an agent request costs"): a fixed number of
// requests, sent by this process at a fixed concurrency, then the gateway left to execute
// every run they made, so each request is counted with its whole run. Per request it gives
// the gateway's CPU (user + system from /proc) and, under --callgrind, the instructions
// valgrind counted (every thread of the process: the event loop, the WAL checkpoint thread,
// V8's compiler and GC threads) — the same count on a quiet or a busy machine. Each figure
// is split in two: the accept window (from the first request to the last answer) and the
// rest of the drain (the runs still queued when the last answer came).
//
// --worker running: the config of bench/run.mjs (one session key, the `echo` model, runs
// executing while the requests come). --worker held: one worker slot and a model that holds
// its call (bench/stall-model.mjs), as bench/drain.mjs accepts: the accept path alone.
// --sql-counts counts the statements (bench/sql-count-preload.mjs) of the whole window.
// Several --gateway-dir are measured in turn, each on a fresh store, --rounds times.
//
//   node bench/agent-cost.mjs [--gateway-dir <checkout>]... [--requests 2000] [--warmup 500]
//                             [--concurrency 16] [--worker running|held] [--keys one|distinct] [--rounds 1]
//                             [--callgrind] [--sql-counts]
import { spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { fillBody, freshTag, PLACEHOLDER, realisticText, requestId, template } from './bodies.mjs';
import { serverCpuWindow } from './machine-load.mjs';
import { startServer, stopServer } from './processes.mjs';
import { startStallModel } from './stall-model.mjs';
import { median } from './stats.mjs';

const { values } = parseArgs({
  options: {
    'gateway-dir': { type: 'string', multiple: true },
    requests: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '16' },
    worker: { type: 'string', default: 'running' },
    keys: { type: 'string', default: 'one' },
    rounds: { type: 'string', default: '1' },
    callgrind: { type: 'boolean', default: false },
    'sql-counts': { type: 'boolean', default: false },
    // Keeps each window's callgrind dumps there (for callgrind_annotate) instead of deleting them.
    'keep-callgrind': { type: 'string' },
  },
});
const log = (line) => process.stderr.write(`${line}\n`);
const HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
const benchRoot = new URL('..', import.meta.url).pathname;
const dirs = (values['gateway-dir'] ?? [benchRoot]).map((dir) => resolve(dir));
const REQUESTS = Number(values.requests);
const WARMUP = Number(values.warmup);
const CONCURRENCY = Number(values.concurrency);
const held = values.worker === 'held';
// run.mjs's bodies; --keys distinct gives each request a session key of its own.
const parts = template({
  message: realisticText(PLACEHOLDER),
  name: 'CI',
  ...(values.keys === 'distinct' ? { sessionKey: `hook:p:${PLACEHOLDER}` } : {}),
  wakeMode: 'next-heartbeat',
  deliver: false,
});
const work = mkdtempSync(join(tmpdir(), 'agentgate-agentcost-'));
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function writeConfig(home, stall) {
  const path = join(home, 'agentgate.json5');
  const agents = stall
    ? {
        models: { providers: { bench: { api: 'openai-chat', baseUrl: stall.url, apiKey: 'sk-bench' } } },
        agents: { defaults: { model: 'bench/m', maxConcurrent: 1, heartbeat: { every: '0' } } },
      }
    : { models: { providers: { echo: { api: 'echo' } } }, agents: { defaults: { model: 'echo/echo' } } };
  writeFileSync(
    path,
    JSON.stringify({
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: `bench-admin-${'y'.repeat(40)}` } },
      hooks: {
        enabled: true,
        token: HOOK_TOKEN,
        defaultSessionKey: 'hook:bench',
        allowRequestSessionKey: true,
        allowedSessionKeyPrefixes: ['hook:'],
      },
      ...agents,
    }),
    { mode: 0o600 },
  );
  return path;
}

/** Sends `count` requests, `CONCURRENCY` at a time on kept-alive connections; resolves to the 2xx count. */
async function send(url, count) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const tag = freshTag();
  let next = 0;
  let ok = 0;
  const one = (n) =>
    new Promise((done, fail) => {
      const body = fillBody(parts, requestId(tag, 1, n));
      const req = request(
        `${url}/hooks/agent`,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${HOOK_TOKEN}`,
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          if (res.statusCode >= 200 && res.statusCode < 300) ok++;
          res.resume();
          res.on('end', done);
        },
      );
      req.on('error', fail);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) await one(next++);
    }),
  );
  agent.destroy();
  return ok;
}

/**
 * Instructions counted since the last zeroing or dump (which zeroes them): the main thread's
 * (the event loop: the requests and the runs) and every thread's (V8's compiler and GC
 * threads too, whose share is mostly the JIT still compiling: it shrinks with the warm-up).
 */
function callgrindDump(pid, outDir, keepAs) {
  const before = new Set(readdirSync(outDir));
  const r = spawnSync('callgrind_control', ['-d', String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`callgrind_control -d: ${r.stderr}${r.stdout}`);
  const counted = { main: 0, all: 0 };
  for (const file of readdirSync(outDir).filter((f) => !before.has(f))) {
    const text = readFileSync(join(outDir, file), 'utf8');
    const summary = Number(/^summary:\s+(\d+)/m.exec(text)?.[1] ?? 0);
    counted.all += summary;
    // --separate-threads=yes: one file per thread, the main thread's ending in -01.
    if (file.endsWith('-01')) counted.main += summary;
    if (keepAs) renameSync(join(outDir, file), `${keepAs}.${file}`);
    else rmSync(join(outDir, file));
  }
  return counted;
}

async function sample(dir, round) {
  const home = join(work, `${basename(dir)}-${round}`);
  mkdirSync(home);
  const cgDir = join(home, 'callgrind');
  mkdirSync(cgDir);
  const stall = held ? await startStallModel() : undefined;
  const countsFile = join(home, 'sql-counts.json');
  const node = [
    ...(values['sql-counts'] ? ['--import', join(benchRoot, 'bench/sql-count-preload.mjs')] : []),
    join(dir, 'dist/cli/main.js'),
    'run',
    '--config',
    writeConfig(home, stall),
    '--port',
    '0',
  ];
  const [command, args] = values.callgrind
    ? [
        'valgrind',
        [
          '--tool=callgrind',
          '--dump-instr=no',
          '--separate-threads=yes',
          '--compress-strings=no',
          '--compress-pos=no',
          `--callgrind-out-file=${join(cgDir, 'cg.%p')}`,
          process.execPath,
          ...node,
        ],
      ]
    : [process.execPath, node];
  const server = await startServer(command, args, {
    env: { AGENTGATE_LOG_LEVEL: 'warn', AGENTGATE_SQL_COUNTS: countsFile, AGENTGATE_SQL_COUNTS_DIR: dir },
    pattern: /agentgate listening on (\S+)/,
  });
  const pid = server.child.pid;
  const db = new Database(join(home, 'state/agentgate.db'), { readonly: true, fileMustExist: true });
  const active = db.prepare("SELECT count(*) AS n FROM runs WHERE status IN ('queued', 'running')");
  const finished = db.prepare("SELECT count(*) AS n FROM runs WHERE status NOT IN ('queued', 'running')");
  // Held: one run stays running on the stalled call, the rest queued; nothing to wait for.
  const drained = async () => {
    if (held) return;
    while (active.get().n > 0) await sleep(100);
  };
  await send(server.url, WARMUP);
  await drained();
  if (values.callgrind) callgrindDump(pid, cgDir);
  if (values['sql-counts']) server.child.kill('SIGUSR2');
  const finishedBefore = finished.get().n;
  const acceptCpu = serverCpuWindow([pid]);
  const t0 = performance.now();
  const ok = await send(server.url, REQUESTS);
  const seconds = (performance.now() - t0) / 1000;
  const acceptCpuSeconds = acceptCpu();
  const keep = (window) =>
    values['keep-callgrind']
      ? join(resolve(values['keep-callgrind']), `${basename(dir)}-${round}-${window}`)
      : undefined;
  const none = { main: 0, all: 0 };
  const acceptInstructions = values.callgrind ? callgrindDump(pid, cgDir, keep('accept')) : none;
  const runsInWindow = finished.get().n - finishedBefore;
  const drainCpu = serverCpuWindow([pid]);
  await drained();
  const drainCpuSeconds = drainCpu();
  const drainInstructions = values.callgrind ? callgrindDump(pid, cgDir, keep('drain')) : none;
  if (values['sql-counts']) server.child.kill('SIGUSR2');
  db.close();
  stall?.release();
  await stopServer(server.child);
  await stall?.close();
  const sql = values['sql-counts'] ? JSON.parse(readFileSync(countsFile, 'utf8')) : {};
  rmSync(home, { recursive: true, force: true });
  if (ok !== REQUESTS) log(`${basename(dir)}: only ${ok} of ${REQUESTS} answered 2xx`);
  return {
    rps: REQUESTS / seconds,
    runsInWindow,
    acceptCpuUs: (acceptCpuSeconds * 1e6) / REQUESTS,
    totalCpuUs: ((acceptCpuSeconds + drainCpuSeconds) * 1e6) / REQUESTS,
    acceptInstructions: acceptInstructions.all / REQUESTS,
    totalInstructions: (acceptInstructions.all + drainInstructions.all) / REQUESTS,
    mainInstructions: (acceptInstructions.main + drainInstructions.main) / REQUESTS,
    sql,
  };
}

const results = dirs.map(() => []);
for (let round = 1; round <= Number(values.rounds); round++) {
  const order = dirs.map((_, i) => i);
  if (round % 2 === 0) order.reverse();
  for (const i of order) {
    const s = await sample(dirs[i], round);
    results[i].push(s);
    log(
      `round ${round} ${dirs[i]}: ${s.rps.toFixed(0)} req/s; CPU µs/req accept ${s.acceptCpuUs.toFixed(0)}, with the drain ${s.totalCpuUs.toFixed(0)}${values.callgrind ? `; instructions/req, all threads: accept ${(s.acceptInstructions / 1e3).toFixed(0)}k, with the drain ${(s.totalInstructions / 1e3).toFixed(0)}k; the main thread's with the drain ${(s.mainInstructions / 1e3).toFixed(0)}k` : ''}; runs finished in the accept window ${s.runsInWindow} (${((100 * s.runsInWindow) / REQUESTS).toFixed(1)} %)`,
    );
  }
}

console.log(
  `\n${REQUESTS} requests at concurrency ${CONCURRENCY} after ${WARMUP} warm-up, worker ${values.worker}, ${values.keys} session key(s)${values.callgrind ? ', under callgrind' : ''}; medians over ${values.rounds} round(s)`,
);
const fmt = (samples, key, scale = 1, digits = 0) =>
  (median(samples.map((s) => s[key])) / scale).toFixed(digits);
for (const [i, samples] of results.entries()) {
  console.log(
    `${dirs[i]}: CPU µs/req accept ${fmt(samples, 'acceptCpuUs')}, with the drain ${fmt(samples, 'totalCpuUs')}${values.callgrind ? `; instructions/req, all threads: accept ${fmt(samples, 'acceptInstructions', 1e3)}k, with the drain ${fmt(samples, 'totalInstructions', 1e3)}k; the main thread's with the drain ${fmt(samples, 'mainInstructions', 1e3)}k` : ''}; runs finished in the accept window ${fmt(samples, 'runsInWindow')} of ${REQUESTS}`,
  );
}
if (values['sql-counts']) {
  console.log(
    `\nstatements per 1000 requests, their runs included (${dirs.map((d) => basename(d)).join(' | ')})`,
  );
  const per = results.map((samples) => {
    const keys = new Set(samples.flatMap((s) => Object.keys(s.sql)));
    return new Map(
      [...keys].map((k) => [k, median(samples.map((s) => (1000 * (s.sql[k] ?? 0)) / REQUESTS))]),
    );
  });
  const keys = [...new Set(per.flatMap((m) => [...m.keys()]))];
  const diff = (k) => Math.max(...per.map((m) => Math.abs((m.get(k) ?? 0) - (per[0].get(k) ?? 0))));
  for (const k of keys.sort((a, b) => diff(b) - diff(a)).slice(0, 40))
    console.log(`${per.map((m) => (m.get(k) ?? 0).toFixed(1).padStart(8)).join(' ')}  ${k}`);
}
rmSync(work, { recursive: true, force: true });
