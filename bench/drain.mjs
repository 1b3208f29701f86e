// The drain benchmark: how fast the gateway *executes* agent runs compared with how
// fast it *accepts* them, on SQLite and on PostgreSQL, for runs with their own session
// keys ("distinct") and for runs of one session key ("one"), beside a peer queue —
// graphile-worker draining no-op jobs on the same PostgreSQL server — in the same
// interleaved rounds.
//
// Each gateway case (engine × keys) on a fresh store, started through the CLI:
//   1. accept: the gateway runs with one worker slot and a model (bench/stall-model.mjs)
//      that holds its call, so its worker claims one run and waits: the rest of what it
//      accepts stays queued and the workers take no CPU. wrk loads /hooks/agent
//      (warm-up, then --accept-seconds); the accept rate is wrk's req/s of the measured
//      window, and everything accepted (warm-up included) is the backlog.
//   2. SIGTERM; the held call is answered once the worker has stopped claiming, so the
//      gateway exits at once with the backlog still queued.
//   3. execute: the gateway starts again on that store with the offline `echo` model,
//      `agents.defaults.maxConcurrent` = --concurrency, and drains the backlog. The
//      execute rate is runs/s from the first to the last `finished_at` in the store
//      (runs finished by this start), so the start-up is not counted.
// Bodies are ~1 KB with `deliver: false` and `wakeMode: "next-heartbeat"`, and
// heartbeats are off (`every: "0"`), so runs add no heartbeat or delivery work.
//
// The peer, once a round per setting (bench/peer.mjs): K no-op jobs added in one
// `add_jobs` call, then one graphile-worker process with concurrency --concurrency
// drains them — as it comes (`defaults`: no local queue, one completion per job) and
// with the settings of graphile-worker's performance page (`tuned`: a local queue of
// 500, batched completions); jobs/s from the first job run to the last. K is the PostgreSQL gateway's distinct-key backlog of the same round
// (--peer-jobs fixes it). graphile-worker runs under Node 24 and lives in a cache
// directory outside the repository (installed at bench time).
//
//   node bench/drain.mjs [--rounds 3] [--accept-seconds 4] [--warmup 1] [--connections 64]
//                        [--threads 1] [--concurrency 64] [--engines sqlite,postgres]
//                        [--keys distinct,one] [--peer on|off] [--peer-jobs K] [--peer-settings both|tuned|defaults]
//                        [--gateway-dir <checkout>]... [--pg-url <admin url>]
//                        [--drain-timeout 300] [--cpu-prof <dir>] [--json <file>]
//   npm run bench -- --drain-only [the same options]
//
// --cpu-prof <dir> runs the first round's execute phases under `node --cpu-prof`, writes
// the profiles there and prints each one's top self-time functions.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { freshTag, PLACEHOLDER, realisticText, template } from './bodies.mjs';
import { topSelfTime } from './cpu-profile.mjs';
import { othersCpuWindow, serverCpuWindow } from './machine-load.mjs';
import { ensurePeer, runPeer } from './peer.mjs';
import { startServer, stopServer } from './processes.mjs';
import { startStallModel } from './stall-model.mjs';
import { median, range } from './stats.mjs';
import { commitCheck, pgDatabase } from './store-check.mjs';
import { ensureWrk, runWrk, wrkVersion } from './wrk.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    'accept-seconds': { type: 'string', default: '4' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '64' },
    threads: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '64' },
    engines: { type: 'string', default: 'sqlite,postgres' },
    keys: { type: 'string', default: 'distinct,one' },
    peer: { type: 'string', default: 'on' },
    'peer-jobs': { type: 'string' },
    // tuned: graphile-worker's performance-page settings; defaults: as it comes; both: each, every round.
    'peer-settings': { type: 'string', default: 'both' },
    'gateway-dir': { type: 'string', multiple: true },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    'drain-timeout': { type: 'string', default: '300' },
    'cpu-prof': { type: 'string' },
    json: { type: 'string' },
  },
});
const log = (line) => process.stderr.write(`${line}\n`);
const ROUNDS = Number(values.rounds);
const ACCEPT_SECONDS = Number(values['accept-seconds']);
const WARMUP = Number(values.warmup);
const CONNECTIONS = Number(values.connections);
const THREADS = Number(values.threads);
const CONCURRENCY = Number(values.concurrency);
const DRAIN_TIMEOUT_MS = Number(values['drain-timeout']) * 1000;
const ENGINES = values.engines.split(',').filter(Boolean);
const KEYS = values.keys.split(',').filter(Boolean);
const PG_URL = values['pg-url'];
const HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
const ADMIN_TOKEN = `bench-admin-${'y'.repeat(40)}`;
if (
  ENGINES.some((e) => !['sqlite', 'postgres'].includes(e)) ||
  KEYS.some((k) => !['distinct', 'one'].includes(k)) ||
  !(CONCURRENCY >= 1 && CONCURRENCY <= 256)
) {
  log('--engines takes sqlite,postgres; --keys distinct,one; --concurrency 1..256 (the config maximum)');
  process.exit(2);
}
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const benchRoot = new URL('..', import.meta.url).pathname;
const gatewayDirs = (values['gateway-dir'] ?? [benchRoot]).map((dir) => resolve(dir));
const revisionOf = (dir) => {
  const rev = spawnSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  if (rev.status !== 0) return 'not a git checkout';
  const dirty = spawnSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], {
    encoding: 'utf8',
  });
  return `${rev.stdout.trim()}${dirty.stdout.trim() ? '+uncommitted' : ''}`;
};
const gateways = gatewayDirs.map((dir) => ({ dir, revision: revisionOf(dir) }));
const gatewayName = (g) => (gateways.length > 1 ? ` · ${basename(g.dir)}@${g.revision}` : '');

const wrkProblem = ensureWrk(log);
if (wrkProblem) {
  log(`the drain benchmark needs wrk: ${wrkProblem}`);
  process.exit(2);
}
let peer = null;
if (values.peer === 'on' && ENGINES.includes('postgres')) {
  peer = ensurePeer(log);
  if (peer.problem) {
    log(`WARNING: no peer this run: ${peer.problem}`);
    peer = null;
  }
}

// Bodies: the run.mjs agent body, plus a session key per request or one for all.
const bodyOf = (sessionKey) =>
  template({
    message: realisticText(PLACEHOLDER),
    name: 'CI',
    sessionKey,
    wakeMode: 'next-heartbeat',
    deliver: false,
  });
const BODIES = { distinct: bodyOf(`hook:drain:${PLACEHOLDER}`), one: bodyOf('hook:drain-one') };

const work = mkdtempSync(join(tmpdir(), 'agentgate-drain-'));

function writeConfig(path, { model, providers, maxConcurrent, pgUrl }) {
  writeFileSync(
    path,
    JSON.stringify({
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
      hooks: {
        enabled: true,
        token: HOOK_TOKEN,
        allowRequestSessionKey: true,
        allowedSessionKeyPrefixes: ['hook:'],
      },
      models: { providers },
      agents: { defaults: { model, maxConcurrent, heartbeat: { every: '0' } } },
      ...(pgUrl ? { store: { driver: 'postgres', url: pgUrl } } : {}),
    }),
    { mode: 0o600 },
  );
}

/** Reads a gateway's runs table, SQLite or PostgreSQL, beside it or after it. */
async function openRuns(engine, where) {
  const sql = {
    active: "SELECT count(*) AS n FROM runs WHERE status IN ('queued', 'running')",
    counts:
      "SELECT count(*) AS accepted, sum(CASE WHEN status = 'queued' THEN 1 ELSE 0 END) AS queued, sum(CASE WHEN finished_at IS NOT NULL THEN 1 ELSE 0 END) AS finished FROM runs WHERE source = 'hook:agent'",
    since: (p) =>
      `SELECT count(*) AS n, min(finished_at) AS first, max(finished_at) AS last, sum(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END) AS succeeded FROM runs WHERE finished_at >= ${p}`,
  };
  if (engine === 'sqlite') {
    let db;
    const open = () => {
      db ??= new Database(where, { readonly: true, fileMustExist: true });
      return db;
    };
    return {
      active: async () => open().prepare(sql.active).get().n,
      counts: async () => open().prepare(sql.counts).get(),
      since: async (at) => open().prepare(sql.since('?')).get(at),
      close: async () => db?.close(),
    };
  }
  const pool = new pg.Pool({ connectionString: where, max: 1 });
  const numbers = (row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
  return {
    active: async () => Number((await pool.query(sql.active)).rows[0].n),
    counts: async () => numbers((await pool.query(sql.counts)).rows[0]),
    since: async (at) => numbers((await pool.query(sql.since('$1'), [at])).rows[0]),
    close: () => pool.end(),
  };
}

const startGateway = (dir, configPath, nodeFlags = []) =>
  startServer(
    process.execPath,
    [...nodeFlags, join(dir, 'dist/cli/main.js'), 'run', '--config', configPath, '--port', '0'],
    { env: { AGENTGATE_LOG_LEVEL: 'warn' }, pattern: /agentgate listening on (\S+)/ },
  );

/** One gateway case: accept a backlog with the workers held, then drain it. */
async function measureGateway(g, engine, keys, profileDir) {
  const home = mkdtempSync(join(work, `${engine}-${keys}-`));
  const configPath = join(home, 'agentgate.json5');
  const database =
    engine === 'postgres' ? pgDatabase(PG_URL, `agentgate_drain_${randomBytes(4).toString('hex')}`) : null;
  await database?.create();
  const stall = await startStallModel();
  let gateway;
  try {
    // 1. Accept, with the one worker slot held by the stalled model.
    writeConfig(configPath, {
      // The ingress stores the resolved model with each run, so both phases name the
      // same one, `bench/m`: here the stalled endpoint, below the echo provider.
      model: 'bench/m',
      providers: { bench: { api: 'openai-chat', baseUrl: stall.url, apiKey: 'sk-bench' } },
      maxConcurrent: 1,
      pgUrl: database?.url,
    });
    gateway = await startGateway(g.dir, configPath);
    const load = (seconds) =>
      runWrk({
        url: gateway.url,
        path: '/hooks/agent',
        seconds,
        connections: CONNECTIONS,
        threads: THREADS,
        token: HOOK_TOKEN,
        tag: freshTag(),
        parts: BODIES[keys],
      });
    const loads = WARMUP > 0 ? [await load(WARMUP)] : [];
    const othersAccept = othersCpuWindow([gateway.child.pid]);
    const cpuAccept = serverCpuWindow([gateway.child.pid]);
    loads.push(await load(ACCEPT_SECONDS));
    const acceptCpuSeconds = cpuAccept();
    const accept = { ...loads.at(-1), othersCpu: othersAccept() };
    const totals = { ok: 0, sent: 0, rejected: 0 };
    for (const r of loads) {
      totals.ok += r.ok;
      totals.sent += r.sent;
      totals.rejected += r.other;
    }
    // 2. Stop; answer the held call once the worker has stopped claiming.
    const exited = new Promise((done) => {
      gateway.child.removeAllListeners('exit');
      gateway.child.on('exit', done);
    });
    gateway.child.kill('SIGTERM');
    await sleep(300);
    stall.release();
    await exited;
    gateway = undefined;
    const where = database?.url ?? join(home, 'state/agentgate.db');
    let runs = await openRuns(engine, where);
    const before = await runs.counts();
    if (engine === 'sqlite') {
      await runs.close(); // reopened after the restart, to see the new WAL
      runs = await openRuns(engine, where);
    }

    // 3. Execute: the same store, the echo model, --concurrency worker slots.
    writeConfig(configPath, {
      model: 'bench/m',
      providers: { bench: { api: 'echo' } },
      maxConcurrent: CONCURRENCY,
      pgUrl: database?.url,
    });
    const flags = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
    const startedAt = Date.now();
    gateway = await startGateway(g.dir, configPath, flags);
    const othersDrain = othersCpuWindow([gateway.child.pid]);
    const cpuDrain = serverCpuWindow([gateway.child.pid]);
    let drainedSeconds = null;
    for (const t0 = performance.now(); performance.now() - t0 < DRAIN_TIMEOUT_MS; await sleep(50)) {
      if ((await runs.active()) === 0) {
        drainedSeconds = (Date.now() - startedAt) / 1000;
        break;
      }
    }
    const drainCpuSeconds = cpuDrain();
    const othersCpu = othersDrain();
    await stopServer(gateway.child);
    gateway = undefined;
    const done = await runs.since(startedAt);
    await runs.close();
    const executeRps =
      done.n > 1 && done.last > done.first ? (done.n - 1) / ((done.last - done.first) / 1000) : 0;
    return {
      accept: {
        rps: accept.rps,
        p50: accept.p50,
        p99: accept.p99,
        ok: accept.ok,
        other: accept.other,
        othersCpu: accept.othersCpu,
        cpuUsPerRequest: acceptCpuSeconds ? (acceptCpuSeconds * 1e6) / (accept.ok + accept.other) : null,
      },
      backlog: before.queued,
      finishedBeforeDrain: before.finished,
      commit: commitCheck(`${engine} ${keys}${gatewayName(g)}`, before.accepted, totals),
      execute: {
        runs: done.n,
        succeeded: done.succeeded,
        rps: executeRps,
        drainedSeconds,
        othersCpu,
        cpuUsPerRun: drainCpuSeconds && done.n ? (drainCpuSeconds * 1e6) / done.n : null,
      },
      ratio: executeRps / accept.rps,
    };
  } finally {
    if (gateway) await stopServer(gateway.child);
    await stall.close();
    await database?.drop().catch((error) => log(`dropping ${database.url}: ${error.message}`));
    rmSync(home, { recursive: true, force: true });
  }
}

const PEER_SETTINGS = values['peer-settings'] === 'both' ? ['defaults', 'tuned'] : [values['peer-settings']];
for (const setting of PEER_SETTINGS)
  if (setting !== 'defaults' && setting !== 'tuned') throw new Error(`--peer-settings: unknown ${setting}`);
const PEER_LABEL = { defaults: 'as it comes', tuned: 'tuned' };

async function measurePeer(jobs, setting) {
  const database = pgDatabase(PG_URL, `agentgate_peer_${randomBytes(4).toString('hex')}`);
  await database.create();
  try {
    const othersCpu = othersCpuWindow([]);
    const result = await runPeer(peer, {
      url: database.url,
      jobs,
      concurrency: CONCURRENCY,
      settings: setting === 'defaults' ? { $preset: 'defaults' } : {},
      timeoutMs: DRAIN_TIMEOUT_MS,
    });
    return { ...result, setting, othersCpu: othersCpu() };
  } finally {
    await database.drop().catch((error) => log(`dropping ${database.url}: ${error.message}`));
  }
}

// samples[gatewayIndex][`${engine}/${keys}`] = [per round]; peerSamples[setting] = [per round]
const samples = gateways.map(() => ({}));
const peerSamples = Object.fromEntries(PEER_SETTINGS.map((setting) => [setting, []]));
const profiles = [];
let exitCode = 0;
try {
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 ? gateways : [...gateways].reverse();
    const summary = [];
    for (const g of order) {
      const index = gateways.indexOf(g);
      for (const engine of ENGINES) {
        for (const keys of KEYS) {
          let profileDir;
          if (values['cpu-prof'] && round === 1 && index === 0) {
            profileDir = resolve(values['cpu-prof'], `${engine}-${keys}`);
            mkdirSync(profileDir, { recursive: true });
          }
          const sample = await measureGateway(g, engine, keys, profileDir);
          const key = `${engine}/${keys}`;
          samples[index][key] = [...(samples[index][key] ?? []), sample];
          if (profileDir) profiles.push({ label: `${engine}, ${keys} keys`, dir: profileDir });
          summary.push(
            `${engine} ${keys}${gatewayName(g)}: accept ${sample.accept.rps.toFixed(0)}/s, execute ${sample.execute.rps.toFixed(0)}/s (${sample.backlog} runs)`,
          );
        }
      }
    }
    if (peer) {
      const backlog = samples[0]['postgres/distinct']?.at(-1)?.backlog;
      const jobs = Number(values['peer-jobs'] ?? backlog ?? 20000);
      for (const setting of PEER_SETTINGS) {
        const sample = await measurePeer(jobs, setting);
        peerSamples[setting].push(sample);
        summary.push(
          `graphile-worker ${PEER_LABEL[setting]}: ${sample.perSecond.toFixed(0)} jobs/s (${jobs} jobs)`,
        );
      }
    }
    log(`round ${round}/${ROUNDS}: ${summary.join('; ')}`);
  }
  report();
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exitCode = exitCode;

function report() {
  const cpu = cpus();
  const fmt = (v, digits = 0) =>
    v === null || v === undefined || Number.isNaN(v) ? 'n/a' : v.toFixed(digits);
  const stat = (list, digits = 0) => {
    const v = list.filter((x) => typeof x === 'number' && Number.isFinite(x));
    if (v.length === 0) return { text: 'n/a', span: 'n/a', median: Number.NaN };
    const r = range(v);
    return {
      median: median(v),
      text: fmt(median(v), digits),
      span: `${fmt(r.min, digits)}–${fmt(r.max, digits)}`,
    };
  };
  console.log(
    [
      '',
      ...gateways.map((g) => `gateway${gatewayName(g)}: ${g.dir} (${g.revision})`),
      `machine: ${cpu.length} × ${cpu[0]?.model.trim()}, Node ${process.version}; wrk ${wrkVersion()}, ${THREADS} thread(s), ${CONNECTIONS} connections`,
      `${ROUNDS} interleaved rounds; accept: ${WARMUP} s warm-up + ${ACCEPT_SECONDS} s of /hooks/agent with the worker held; execute: the backlog drained by ${CONCURRENCY} worker slots (echo model, deliver false, next-heartbeat, heartbeats off)`,
      peer
        ? `peer: graphile-worker ${peer.workerVersion} under Node ${peer.nodeVersion}, concurrency ${CONCURRENCY}; ${PEER_SETTINGS.map((setting) => `${PEER_LABEL[setting]}: ${JSON.stringify(peerSamples[setting][0]?.settings ?? {})}`).join('; ')}`
        : 'peer: not run',
      '',
      '| case | accept req/s median (min–max) | backlog runs | execute runs/s median (min–max) | executed/accepted median (min–max) | gateway CPU µs per run (execute) | CPU µs per request (accept) | others % (accept / execute) |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ].join('\n'),
  );
  const lines = [];
  gateways.forEach((g, index) => {
    for (const [key, list] of Object.entries(samples[index])) {
      const [engine, keys] = key.split('/');
      const a = stat(list.map((s) => s.accept.rps));
      const e = stat(list.map((s) => s.execute.rps));
      const r = stat(
        list.map((s) => s.ratio),
        2,
      );
      lines.push(
        `| ${engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${keys === 'one' ? 'one session key' : 'distinct session keys'}${gatewayName(g)} | ${a.text} (${a.span}) | ${stat(list.map((s) => s.backlog)).text} | ${e.text} (${e.span}) | ${r.text}× (${r.span}) | ${stat(list.map((s) => s.execute.cpuUsPerRun)).text} | ${stat(list.map((s) => s.accept.cpuUsPerRequest)).text} | ${stat(list.map((s) => s.accept.othersCpu)).text} / ${stat(list.map((s) => s.execute.othersCpu)).text} |`,
      );
    }
  });
  for (const [setting, list] of Object.entries(peerSamples)) {
    if (list.length === 0) continue;
    const p = stat(list.map((s) => s.perSecond));
    lines.push(
      `| graphile-worker ${PEER_LABEL[setting]}, no-op jobs (peer) | add_jobs ${stat(list.map((s) => s.addPerSecond)).text}/s | ${stat(list.map((s) => s.jobs)).text} | ${p.text} (${p.span}) | — | ${stat(list.map((s) => s.cpuUsPerJob)).text} | — | — / ${stat(list.map((s) => s.othersCpu)).text} |`,
    );
  }
  console.log(lines.join('\n'));

  console.log(
    '\n(others %: the share of the machine other processes used in the window; on PostgreSQL it includes the database server.)',
  );
  for (const [setting, peerList] of Object.entries(peerSamples)) {
    if (peerList.length === 0) continue;
    console.log(
      `\nPostgreSQL gateway execute rate ÷ graphile-worker ${PEER_LABEL[setting]} jobs/s, per round (same round):`,
    );
    gateways.forEach((g, index) => {
      for (const keys of KEYS) {
        const list = samples[index][`postgres/${keys}`] ?? [];
        const ratios = list.map((s, i) => s.execute.rps / peerList[i].perSecond);
        if (ratios.length === 0) continue;
        const r = stat(ratios, 3);
        console.log(
          `  ${keys} keys${gatewayName(g)}: median ${r.text}× (rounds ${ratios.map((v) => v.toFixed(3)).join(', ')})`,
        );
      }
    });
  }

  console.log('\ndrain goals, medians of this run:');
  gateways.forEach((g, index) => {
    const s = samples[index];
    const line = (label, value, goal, unit) =>
      console.log(
        `  ${Number.isFinite(value) && value >= goal ? 'met    ' : 'NOT met'} ${label}${gatewayName(g)}: ${fmt(value, unit === '×' ? 2 : 0)}${unit} (goal ≥ ${goal}${unit})`,
      );
    if (s['sqlite/distinct'])
      line(
        'SQLite distinct keys, executed/accepted',
        stat(
          s['sqlite/distinct'].map((x) => x.ratio),
          2,
        ).median,
        1,
        '×',
      );
    if (s['sqlite/one'])
      line('SQLite one key, runs/s', stat(s['sqlite/one'].map((x) => x.execute.rps)).median, 5000, '/s');
    for (const [setting, peerList] of Object.entries(peerSamples))
      if (s['postgres/distinct'] && peerList.length)
        line(
          `PostgreSQL distinct keys ÷ graphile-worker ${PEER_LABEL[setting]}`,
          stat(
            s['postgres/distinct'].map((x, i) => x.execute.rps / peerList[i].perSecond),
            2,
          ).median,
          1,
          '×',
        );
  });

  console.log('\nchecks:');
  for (const [index, g] of gateways.entries()) {
    for (const [key, list] of Object.entries(samples[index])) {
      for (const [round, s] of list.entries()) {
        const lost = s.execute.runs !== s.backlog;
        const failed = s.execute.succeeded !== s.execute.runs;
        const bad = !s.commit.pass || lost || failed || s.execute.drainedSeconds === null;
        if (bad) exitCode = 1;
        if (bad || round === 0)
          console.log(
            `  ${bad ? 'FAIL' : 'ok  '} ${key}${gatewayName(g)} round ${round + 1}: ${s.commit.text}; ${s.execute.runs} of ${s.backlog} queued runs executed after the restart (${s.execute.succeeded} succeeded, ${s.finishedBeforeDrain} before it), drained ${s.execute.drainedSeconds === null ? 'NOT within the timeout' : `in ${s.execute.drainedSeconds.toFixed(1)} s from the start`}`,
          );
      }
    }
  }
  for (const p of Object.values(peerSamples).flat())
    if (p.ran !== p.jobs) {
      exitCode = 1;
      console.log(`  FAIL graphile-worker ${PEER_LABEL[p.setting]} ran ${p.ran} of ${p.jobs} jobs`);
    }

  for (const { label, dir } of profiles) {
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
    if (!file) continue;
    console.log(`\nCPU profile, execute phase, ${label} (${join(dir, file)}), top self time:`);
    for (const f of topSelfTime(join(dir, file), 15))
      console.log(
        `  ${(f.share * 100).toFixed(1).padStart(5)} %  ${f.selfMs.toFixed(0).padStart(6)} ms  ${f.name}  ${f.where}`,
      );
  }

  if (values.json) {
    writeFileSync(
      values.json,
      `${JSON.stringify({ options: values, gateways, samples, peer: peerSamples }, null, 2)}\n`,
    );
  }
}
