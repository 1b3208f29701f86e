// Where a gateway's time goes while it accepts agent runs and executes them during the
// load (docs/performance.md, "The agent path after the loops refactor"): each gateway
// (--gateway-dir, several to compare builds) runs under `node --cpu-prof` on a fresh
// SQLite store with the offline `echo` model, wrk loads /hooks/agent with the run.mjs
// bodies (one session key, so runs execute one at a time; --keys distinct gives each
// request its own), and only the profile's samples inside the measured window count.
// Rounds interleave the gateways, the order alternating. Per round and gateway it
// prints req/s, the gateway's CPU per answered request (/proc), the runs finished in
// the window and the voluntary context switches per request; at the end, each file's
// and function's median self and total (inclusive) µs per request, the largest
// differences from the first gateway first.
//
// A V8 profile's samples are wall time while the main thread is not idle: a thread
// waiting for a core, or inside a sync of the WAL (charged to better-sqlite3's
// `sqliteTransaction`), keeps taking samples. Compare shares, not absolute µs, on a
// busy machine, or pass --perf: the gateway runs with `--perf-basic-prof` and `perf
// record` (on-CPU samples only) profiles the window instead; each file's and function's
// share of its samples times the window's CPU gives on-CPU µs (self time only).
// --sql-counts preloads bench/sql-count-preload.mjs, which counts every statement the
// gateway executes in the window (by its SQL), printed per 1000 requests: what the
// store did, independent of the machine. --worker held gives the gateway one worker
// slot and a model that holds its call (bench/stall-model.mjs), as drain.mjs accepts.
//
//   node bench/agent-profile.mjs [--rounds 3] [--duration 8] [--warmup 2] [--connections 64]
//                                [--keys one|distinct] [--gateway-dir <checkout>]... [--top 25]
//                                [--worker running|held] [--sql-counts] [--perf] [--keep <dir>]
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { freshTag, PLACEHOLDER, realisticText, template } from './bodies.mjs';
import { othersCpuWindow, serverCpuWindow } from './machine-load.mjs';
import { startServer, stopServer } from './processes.mjs';
import { startStallModel } from './stall-model.mjs';
import { median } from './stats.mjs';
import { ensureWrk, runWrk } from './wrk.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    keys: { type: 'string', default: 'one' },
    'gateway-dir': { type: 'string', multiple: true },
    top: { type: 'string', default: '25' },
    keep: { type: 'string' },
    'sql-counts': { type: 'boolean', default: false },
    // held: one worker slot and a model that holds its call (bench/stall-model.mjs), as drain.mjs accepts.
    worker: { type: 'string', default: 'running' },
    // On-CPU samples (perf record, cpu-clock) instead of V8's profile.
    perf: { type: 'boolean', default: false },
  },
});
const log = (line) => process.stderr.write(`${line}\n`);
const HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
const ADMIN_TOKEN = `bench-admin-${'y'.repeat(40)}`;
const benchRoot = new URL('..', import.meta.url).pathname;
const dirs = (values['gateway-dir'] ?? [benchRoot]).map((dir) => resolve(dir));
const names = dirs.map((dir) => basename(dir));
const TOP = Number(values.top);
const parts = template({
  message: realisticText(PLACEHOLDER),
  name: 'CI',
  ...(values.keys === 'distinct' ? { sessionKey: `hook:p:${PLACEHOLDER}` } : {}),
  wakeMode: 'next-heartbeat',
  deliver: false,
});

const wrkProblem = ensureWrk(log);
if (wrkProblem) {
  log(`agent-profile needs wrk: ${wrkProblem}`);
  process.exit(2);
}
const work = values.keep ? resolve(values.keep) : mkdtempSync(join(tmpdir(), 'agentgate-agentprof-'));
mkdirSync(work, { recursive: true });

/** CLOCK_MONOTONIC in µs, the clock of a V8 profile's timestamps on Linux. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/** Voluntary context switches of a process (each blocking syscall, such as a sync, is one). */
const contextSwitches = (pid) =>
  Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

/** Self and total µs per function and per file, from the samples between fromUs and toUs. */
function profileWindow(path, fromUs, toUs) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const label = (node) => {
    const { callFrame } = node;
    const file = callFrame.url.replace(/^file:\/\//, '').replace(/^.*?\/(dist|node_modules)\//, '$1/');
    return {
      fn: `${callFrame.functionName || '(anonymous)'} ${file ? `${file}:${callFrame.lineNumber + 1}` : ''}`,
      file: file || `(${callFrame.functionName || 'native'})`,
    };
  };
  const selfFn = new Map();
  const selfFile = new Map();
  const totalFn = new Map();
  const totalFile = new Map();
  const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
  let t = profile.startTime;
  let all = 0;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs || byId.get(id).callFrame.functionName === '(idle)') return;
    const us = profile.timeDeltas[i + 1] ?? 0; // the time until the next sample belongs to this one
    all += us;
    const leaf = label(byId.get(id));
    add(selfFn, leaf.fn, us);
    add(selfFile, leaf.file, us);
    const seenFn = new Set();
    const seenFile = new Set();
    for (let node = id; node !== undefined; node = parent.get(node)) {
      const l = label(byId.get(node));
      if (!seenFn.has(l.fn)) {
        seenFn.add(l.fn);
        add(totalFn, l.fn, us);
      }
      if (!seenFile.has(l.file)) {
        seenFile.add(l.file);
        add(totalFile, l.file, us);
      }
    }
  });
  return { all, selfFn, selfFile, totalFn, totalFile };
}

/** `perf record` of a process's on-CPU time for `seconds`; settles when it has written its file. */
function perfRecord(pid, file, seconds) {
  const child = spawn(
    'perf',
    ['record', '-q', '-F', '499', '-g', '-p', String(pid), '-o', file, '--', 'sleep', String(seconds)],
    {
      stdio: 'ignore',
    },
  );
  return new Promise((done, fail) => {
    child.on('error', fail);
    child.on('exit', done);
  });
}

/**
 * A perf profile as profileWindow's maps, each entry's share of the samples times
 * `cpuUs` (the window's CPU from /proc): on-CPU µs. Self time only (no totals).
 */
function perfReport(file, cpuUs) {
  const out = spawnSync(
    'perf',
    ['report', '-i', file, '--no-children', '-q', '--stdio', '-g', 'none', '--sort', 'dso,sym', '-t', '\t'],
    {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    },
  ).stdout;
  const selfFn = new Map();
  const selfFile = new Map();
  const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
  for (const line of out.split('\n')) {
    const [share, dso, symbol] = line.split('\t').map((field) => field.trim());
    if (!symbol) continue;
    const us = (Number.parseFloat(share) / 100) * cpuUs;
    // JIT frames name their script: one key per build's file, whichever checkout it is.
    const fn = symbol.replace(/^\[.\] /, '').replace(/(file:\/\/)?\S*?\/(dist|node_modules)\//, '$2/');
    const script = /^JS:\S*\s+(\S+?):\d+:\d+$/.exec(fn)?.[1];
    add(selfFn, fn, us);
    add(selfFile, script ? `JS ${script}` : dso.startsWith('[JIT]') ? '[JIT]' : dso, us);
  }
  return { all: cpuUs, selfFn, selfFile, totalFn: new Map(), totalFile: new Map() };
}

function config(home, stall) {
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
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
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

async function sample(dir, name, round) {
  const home = join(work, `${name}-${round}`);
  rmSync(home, { recursive: true, force: true });
  mkdirSync(home);
  const profDir = join(home, 'prof');
  const countsFile = join(home, 'sql-counts.json');
  const stall = values.worker === 'held' ? await startStallModel() : undefined;
  const preload = values['sql-counts'] ? ['--import', join(benchRoot, 'bench/sql-count-preload.mjs')] : [];
  const server = await startServer(
    'node',
    [
      ...preload,
      // V8's log (which --perf-basic-prof turns on) goes to the sample's folder, not the current one.
      ...(values.perf
        ? ['--perf-basic-prof', '--no-logfile-per-isolate', `--logfile=${join(home, 'v8.log')}`]
        : ['--cpu-prof', '--cpu-prof-dir', profDir]),
      join(dir, 'dist/cli/main.js'),
      'run',
      '--config',
      config(home, stall),
      '--port',
      '0',
    ],
    {
      env: { AGENTGATE_LOG_LEVEL: 'warn', AGENTGATE_SQL_COUNTS: countsFile, AGENTGATE_SQL_COUNTS_DIR: dir },
      pattern: /agentgate listening on (\S+)/,
    },
  );
  const load = (seconds) =>
    runWrk({
      url: server.url,
      path: '/hooks/agent',
      seconds,
      connections: Number(values.connections),
      threads: 1,
      token: HOOK_TOKEN,
      tag: freshTag(),
      parts,
    });
  const db = () => new Database(join(home, 'state/agentgate.db'), { readonly: true, fileMustExist: true });
  const finished = () => {
    const d = db();
    try {
      return d.prepare("SELECT count(*) AS n FROM runs WHERE status NOT IN ('queued', 'running')").get().n;
    } finally {
      d.close();
    }
  };
  if (Number(values.warmup) > 0) await load(Number(values.warmup));
  const finishedBefore = finished();
  const cpu = serverCpuWindow([server.child.pid]);
  const others = othersCpuWindow([server.child.pid]);
  const switches0 = contextSwitches(server.child.pid);
  if (values['sql-counts']) server.child.kill('SIGUSR2');
  const fromUs = monotonicUs();
  const perfData = join(home, 'perf.data');
  const recording = values.perf ? perfRecord(server.child.pid, perfData, Number(values.duration)) : undefined;
  const r = await load(Number(values.duration));
  await recording;
  const toUs = monotonicUs();
  if (values['sql-counts']) server.child.kill('SIGUSR2');
  const cpuSeconds = cpu();
  const othersCpu = others();
  const switches = contextSwitches(server.child.pid) - switches0;
  const finishedIn = finished() - finishedBefore;
  stall?.release();
  await stopServer(server.child);
  await stall?.close();
  const answered = r.ok + r.other;
  const prof = values.perf
    ? perfReport(perfData, cpuSeconds * 1e6)
    : profileWindow(
        join(
          profDir,
          readdirSync(profDir).find((f) => f.endsWith('.cpuprofile')),
        ),
        fromUs,
        toUs,
      );
  // The symbol map --perf-basic-prof wrote for perf, read by the report above.
  if (values.perf) rmSync(`/tmp/perf-${server.child.pid}.map`, { force: true });
  const sql = values['sql-counts'] ? JSON.parse(readFileSync(countsFile, 'utf8')) : {};
  if (!values.keep) rmSync(home, { recursive: true, force: true });
  return {
    rps: r.rps,
    answered,
    cpuUs: (cpuSeconds * 1e6) / answered,
    finishedIn,
    prof,
    profUs: prof.all / answered,
    switchesPerReq: switches / answered,
    othersCpu,
    sql,
  };
}

const perReq = (map, answered) => new Map([...map].map(([k, us]) => [k, us / answered]));
const results = dirs.map(() => []);
for (let round = 1; round <= Number(values.rounds); round++) {
  const order = dirs.map((_, i) => i);
  if (round % 2 === 0) order.reverse();
  for (const i of order) {
    const s = await sample(dirs[i], names[i], round);
    results[i].push(s);
    log(
      `round ${round} ${names[i]}: ${s.rps.toFixed(0)} req/s, ${s.cpuUs.toFixed(0)} µs CPU/req (/proc), ${s.profUs.toFixed(0)} µs/req profiled, ${s.finishedIn} runs finished in the window (${((100 * s.finishedIn) / s.answered).toFixed(1)} %), others ${s.othersCpu?.toFixed(0)} % of the machine`,
    );
  }
}

/** Median µs per request of each key over a gateway's rounds. */
function medians(samples, which) {
  const keys = new Set(samples.flatMap((s) => [...s.prof[which].keys()]));
  const out = new Map();
  for (const key of keys)
    out.set(key, median(samples.map((s) => perReq(s.prof[which], s.answered).get(key) ?? 0)));
  return out;
}
const fmt = (n) => n.toFixed(1).padStart(7);
for (const which of values.perf ? ['selfFile', 'selfFn'] : ['selfFile', 'totalFile', 'selfFn', 'totalFn']) {
  const per = results.map((samples) => medians(samples, which));
  const keys = [...new Set(per.flatMap((m) => [...m.keys()]))];
  // Sorted by the largest difference from the first gateway, then by size.
  const diff = (k) => Math.max(...per.map((m) => Math.abs((m.get(k) ?? 0) - (per[0].get(k) ?? 0))));
  const size = (k) => Math.max(...per.map((m) => m.get(k) ?? 0));
  console.log(`\n== ${which}: median µs per request (${names.join(' | ')}); largest differences first`);
  for (const k of keys.sort((a, b) => diff(b) - diff(a) || size(b) - size(a)).slice(0, TOP))
    console.log(`${per.map((m) => fmt(m.get(k) ?? 0)).join(' ')}  ${k}`);
  console.log(`\n== ${which}: largest`);
  for (const k of keys.sort((a, b) => size(b) - size(a)).slice(0, TOP))
    console.log(`${per.map((m) => fmt(m.get(k) ?? 0)).join(' ')}  ${k}`);
}
if (values['sql-counts']) {
  console.log(`\n== statements per 1000 requests, median (${names.join(' | ')}); largest differences first`);
  const per = results.map((samples) => {
    const keys = new Set(samples.flatMap((s) => Object.keys(s.sql)));
    return new Map(
      [...keys].map((k) => [k, median(samples.map((s) => (1000 * (s.sql[k] ?? 0)) / s.answered))]),
    );
  });
  const keys = [...new Set(per.flatMap((m) => [...m.keys()]))];
  const diff = (k) => Math.max(...per.map((m) => Math.abs((m.get(k) ?? 0) - (per[0].get(k) ?? 0))));
  for (const k of keys.sort((a, b) => diff(b) - diff(a)).slice(0, 40))
    console.log(`${per.map((m) => fmt(m.get(k) ?? 0)).join(' ')}  ${k}`);
}
console.log('\n== per round');
for (const [i, samples] of results.entries())
  console.log(
    `${names[i]}: req/s ${samples.map((s) => s.rps.toFixed(0)).join(', ')}; CPU µs/req ${samples.map((s) => s.cpuUs.toFixed(0)).join(', ')}; profiled µs/req ${samples.map((s) => s.profUs.toFixed(0)).join(', ')}; runs finished in window ${samples.map((s) => s.finishedIn).join(', ')}; voluntary switches/req ${samples.map((s) => s.switchesPerReq.toFixed(2)).join(', ')}; others % ${samples.map((s) => s.othersCpu?.toFixed(0)).join(', ')}`,
  );
if (!values.keep) rmSync(work, { recursive: true, force: true });
