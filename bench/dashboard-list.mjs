// What one open dashboard tab costs a gateway whose runs have long replies (docs/performance.md,
// "The dashboard's runs list"): starts the real gateway (dist/, through its CLI) on a new store,
// has it run N agent runs whose replies are M KiB each (the echo provider answers the message back,
// so a message of M KiB is a reply of M KiB), then
//   1. builds one page of the runs list (`GET /api/runs?limit=N`) again and again: its bytes, and the
//      ms from request to the last byte (p50, p95); with `view=summary` too where the gateway has it;
//   2. times wakes (`POST /hooks/wake`, one after another, 20 a second) without a tab, then with one
//      tab polling as the dashboard does (its runs list and /metrics every 2 s): p50 and p99, and the
//      gateway's resident memory over that window (VmRSS at its end; VmHWM, the peak, started over
//      when the tab opens). This runs before (1), whose whole-list builds would inflate the memory.
// Each `--gateway-dir` is measured in turn, every round, so a before/after comparison sees the same
// machine; the tab asks for the list the way that gateway's own dashboard does (the summary view
// when the gateway answers it, else the whole list).
//
//   node bench/dashboard-list.mjs [--gateway-dir /work/before --gateway-dir .] [--runs 200]
//     [--reply-kib 320] [--builds 10] [--seconds 10] [--rounds 1] [--store sqlite|postgres]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    'gateway-dir': { type: 'string', multiple: true, default: ['.'] },
    runs: { type: 'string', default: '200' },
    'reply-kib': { type: 'string', default: '320' },
    builds: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '1' },
    store: { type: 'string', default: 'sqlite' },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const RUNS = Number(values.runs);
const REPLY_BYTES = Number(values['reply-kib']) * 1024;
const HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
const ADMIN_TOKEN = `bench-admin-${'y'.repeat(40)}`;
const POLL_MS = 2000;
const WAKES_PER_SECOND = 20;

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const kib = (status, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
const memoryMiB = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: kib(status, 'VmRSS') / 1024, peak: kib(status, 'VmHWM') / 1024 };
};
/** Starts the process's peak resident set (VmHWM) over from now (Linux: clear_refs 5). */
const resetPeak = (pid) => writeFileSync(`/proc/${pid}/clear_refs`, '5');

/** A PostgreSQL database of its own for one gateway, through the pg client the checkout ships. */
async function pgDatabase() {
  const pg = createRequire(join(resolve('.'), 'package.json'))('pg');
  const name = `agentgate_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: values['pg-url'] });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(values['pg-url']);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: values['pg-url'] });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

async function startGateway(gatewayDir, dir, store) {
  const config = join(dir, 'agentgate.json5');
  writeFileSync(
    config,
    JSON.stringify({
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
      hooks: { enabled: true, token: HOOK_TOKEN, maxBodyBytes: REPLY_BYTES + 64 * 1024 },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo', heartbeat: { every: '0' } } },
      store,
    }),
    { mode: 0o600 },
  );
  const child = spawn(process.execPath, [join(gatewayDir, 'dist/cli/main.js'), 'run', '--config', config], {
    env: { ...process.env, AGENTGATE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The gateway's last words, to say why it stopped if it does.
  let output = '';
  const url = await new Promise((done, fail) => {
    const onData = (chunk) => {
      output = `${output}${chunk}`.slice(-8192);
      const match = /agentgate listening on (\S+)/.exec(output);
      if (match) done(match[1]);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => fail(new Error(`gateway exited (${code}):\n${output}`)));
  });
  const stop = async () => {
    child.removeAllListeners('exit');
    child.kill('SIGTERM');
    await new Promise((done) => child.on('exit', done));
  };
  child.on('exit', (code, signal) =>
    console.error(`gateway ${gatewayDir} exited (${code ?? signal}):\n${output}`),
  );
  return { child, url, stop };
}

const admin = (url, path) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

/** One list page, read to its last byte: its size and how long it took. */
async function buildPage(url, query) {
  const started = performance.now();
  const answer = await admin(url, `/api/runs?${query}`);
  const body = Buffer.from(await answer.arrayBuffer());
  if (answer.status !== 200) throw new Error(`GET /api/runs?${query} answered ${answer.status}: ${body}`);
  return { ms: performance.now() - started, bytes: body.length, body };
}

async function gauge(url, name) {
  const text = await (await admin(url, '/metrics')).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
}

/** Queues RUNS agent runs whose replies will be REPLY_BYTES each, and waits until all ran. */
async function fill(url) {
  const filler = 'All checks passed; nothing needs a look. '.repeat(Math.ceil(REPLY_BYTES / 42));
  for (let i = 0; i < RUNS; i++) {
    const message = `Report ${i}: all green\n\n${filler}`.slice(0, REPLY_BYTES);
    const answer = await fetch(`${url}/hooks/agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, name: 'Report', deliver: false }),
    });
    if (answer.status !== 202)
      throw new Error(`agent hook answered ${answer.status}: ${await answer.text()}`);
  }
  for (;;) {
    const [queued, running] = await Promise.all([
      gauge(url, 'agentgate_runs_queued'),
      gauge(url, 'agentgate_runs_running'),
    ]);
    if (queued === 0 && running === 0) return;
    await sleep(250);
  }
}

/** Wakes, one after another at WAKES_PER_SECOND, for `seconds`: their latencies, sorted. */
async function wakes(url, seconds) {
  const latencies = [];
  const until = performance.now() + seconds * 1000;
  let i = 0;
  while (performance.now() < until) {
    const due = performance.now() + 1000 / WAKES_PER_SECOND;
    const started = performance.now();
    const answer = await fetch(`${url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: `wake ${i++} ${randomBytes(4).toString('hex')}`, mode: 'next-heartbeat' }),
    });
    await answer.arrayBuffer();
    if (answer.status !== 200) throw new Error(`wake answered ${answer.status}`);
    latencies.push(performance.now() - started);
    const left = due - performance.now();
    if (left > 0) await sleep(left);
  }
  return latencies.sort((a, b) => a - b);
}

/** A dashboard tab: its list and /metrics every 2 s, one poll at a time, until `stop()`. */
function tab(url, query) {
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const started = performance.now();
      await buildPage(url, query);
      await (await admin(url, '/metrics')).text();
      const left = POLL_MS - (performance.now() - started);
      if (left > 0 && !stopped) await sleep(left);
    }
  })();
  return async () => {
    stopped = true;
    await done;
  };
}

const ms = (value) => value.toFixed(1);
const mb = (bytes) => (bytes / 1e6).toFixed(bytes < 1e6 ? 3 : 1);

async function measure(gatewayDir) {
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-dashlist-'));
  const database = values.store === 'postgres' ? await pgDatabase() : undefined;
  const store = database
    ? { driver: 'postgres', url: database.url }
    : { driver: 'sqlite', path: join(dir, 'agentgate.db') };
  const { child, url, stop } = await startGateway(gatewayDir, dir, store);
  try {
    await fill(url);
    const probe = JSON.parse((await buildPage(url, 'limit=1&view=summary')).body);
    const summaries = probe.runs[0] && 'replyExcerpt' in probe.runs[0];
    // The tab first, its memory measured from a fresh peak: nothing else ran in that window.
    const alone = await wakes(url, Number(values.seconds));
    resetPeak(child.pid);
    const closeTab = tab(url, `limit=${RUNS}${summaries ? '&view=summary' : ''}`);
    const watched = await wakes(url, Number(values.seconds));
    await closeTab();
    const memory = memoryMiB(child.pid);
    const views = summaries ? ['full', 'summary'] : ['full'];
    const pages = {};
    for (const view of views) {
      const query = `limit=${RUNS}${view === 'summary' ? '&view=summary' : ''}`;
      await buildPage(url, query); // warm
      const builds = [];
      for (let i = 0; i < Number(values.builds); i++) builds.push(await buildPage(url, query));
      const times = builds.map((b) => b.ms).sort((a, b) => a - b);
      pages[view] = { bytes: builds[0].bytes, p50: quantile(times, 0.5), p95: quantile(times, 0.95) };
    }
    return { pages, alone, watched, memory, tabView: summaries ? 'summary' : 'full' };
  } finally {
    await stop();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `${RUNS} runs with ${values['reply-kib']} KiB replies, ${values.store}; wakes at ${WAKES_PER_SECOND}/s for ${values.seconds} s`,
);
for (let round = 0; round < Number(values.rounds); round++) {
  for (const gatewayDir of values['gateway-dir'].map((d) => resolve(d))) {
    const result = await measure(gatewayDir);
    console.log(`\nround ${round + 1}, ${gatewayDir}`);
    for (const [view, page] of Object.entries(result.pages)) {
      console.log(
        `  list page (${view}): ${mb(page.bytes)} MB, built in ${ms(page.p50)} ms p50, ${ms(page.p95)} ms p95`,
      );
    }
    const line = (what, sorted) =>
      `  wake ${what}: p50 ${ms(quantile(sorted, 0.5))} ms, p99 ${ms(quantile(sorted, 0.99))} ms (${sorted.length} wakes)`;
    console.log(line('without a tab', result.alone));
    console.log(line(`with one tab (${result.tabView} list)`, result.watched));
    console.log(
      `  gateway memory with the tab open: RSS ${result.memory.rss.toFixed(0)} MiB at the end, peak ${result.memory.peak.toFixed(0)} MiB`,
    );
  }
}
