// Loads a raw node:http baseline and the real gateway (started through its CLI)
// with wrk, in interleaved rounds (baseline, wake, agent, baseline, ...), and
// reports for each target the median and the min–max of requests/s over the
// rounds, p50/p99 latency, and the ratio to the baseline (of the medians, and
// the range of the per-round ratios). After each agent load it waits until the
// gateway has executed its run backlog, so that work does not land in the next
// target's window. At the end it checks that the store holds every request
// answered 2xx, and it says how much CPU other processes took meanwhile.
//
// Placement is left to the kernel by default. `--pin on` runs wrk on core 0 and
// the servers on core 1 (taskset); measured on the 2-core machine it gave no
// tighter spread when the machine was quiet, and a wider one and lower figures
// when other processes were busy, because a pinned server cannot move to the
// core that is free (docs/performance.md).
//
//   npm run bench -- [--rounds 5] [--duration 10] [--warmup 2] [--connections 64]
//                    [--threads 1] [--pin on|off] [--generator wrk|autocannon]
//                    [--gateway-dir <checkout>]... [--json <file>]
//                    [--store sqlite|postgres] [--replicas 1|2|...] [--pg-url <admin url>]
//                    [--scrape-metrics] [--hook-tokens N] [--tracing off|on]
//                    [--with-budgets <gateway dir>]...
//
// --tracing on starts a local OTLP/HTTP receiver (bench/otlp-sink.mjs) and points every
// gateway at it (OTEL_EXPORTER_OTLP_ENDPOINT; http/protobuf, every request sampled), to
// measure what tracing costs the hook path (docs/tracing.md, "Cost"). Off (the default)
// the gateways run without any OTEL_* variable, whatever the bench's own environment says.
//
// --store postgres runs each gateway on its own new PostgreSQL database (made on the
// server of --pg-url, default postgres://postgres@127.0.0.1:5432/postgres, dropped at
// the end); --replicas N starts N replicas of each gateway on that database and loads
// them together, the connections split evenly (req/s summed, p50 averaged, p99 the
// worst), as a load balancer in front of them would.
//
// --scrape-metrics GETs each gateway's /metrics (admin token) every second during its
// loads, warm-up included, as Prometheus would (more often than its usual 15 s), and
// reports the scrapes. To see what metrics cost the hook path, run a checkout without
// them and this one in the same rounds: `--gateway-dir <without> --gateway-dir .
// --scrape-metrics` (the one without answers its scrapes 404); the report then gives
// each gateway's per-round ratio to the first one, so both share the machine's moods.
//
// --hook-tokens N configures N hook tokens (hooks.token and N-1 senders' hooks.tokens,
// docs/senders.md); the load sends the last one, so a token check that grew with the
// list would show. Gateways from before hooks.tokens existed refuse N above 1.
// --gateway-dir runs the gateway of another checkout (built there with
// `npm run build`) under this benchmark; given twice or more, the gateways are
// measured in the same rounds (their order alternating), so a before/after
// comparison sees the same machine conditions.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runAutocannon } from './autocannon-load.mjs';
import { BODY_TEMPLATES, freshTag } from './bodies.mjs';
import { othersCpuWindow, serverCpuWindow } from './machine-load.mjs';
import { startOtlpSink } from './otlp-sink.mjs';
import { startServer, stopServer } from './processes.mjs';
import { printAgentSplit, printDrains, printNeighbours, printTable } from './report.mjs';
import { scrapeSummary, startScraping } from './scrape.mjs';
import { median } from './stats.mjs';
import { commitCheck, openPgStore, openStore, pgDatabase, waitForIdleRuns } from './store-check.mjs';
import { ensureWrk, runWrk, wrkVersion } from './wrk.mjs';

const DRAIN_SCRIPT = new URL('./drain.mjs', import.meta.url).pathname;
const runDrain = (args) =>
  spawnSync(process.execPath, [DRAIN_SCRIPT, ...args], { stdio: 'inherit' }).status ?? 1;
if (process.argv.includes('--drain-only')) {
  process.exit(runDrain(process.argv.slice(2).filter((arg) => arg !== '--drain-only')));
}

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    threads: { type: 'string', default: '1' },
    pin: { type: 'string', default: 'off' },
    generator: { type: 'string', default: 'wrk' },
    'gateway-dir': { type: 'string', multiple: true },
    'drain-timeout': { type: 'string', default: '300' },
    json: { type: 'string' },
    store: { type: 'string', default: 'sqlite' },
    replicas: { type: 'string', default: '1' },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    'scrape-metrics': { type: 'boolean', default: false },
    drain: { type: 'boolean', default: false },
    'hook-tokens': { type: 'string', default: '1' },
    tracing: { type: 'string', default: 'off' },
    'with-budgets': { type: 'string', multiple: true },
  },
});
if (!['off', 'on'].includes(values.tracing)) {
  process.stderr.write('--tracing must be off or on\n');
  process.exit(2);
}
const sink = values.tracing === 'on' ? await startOtlpSink() : undefined;
/** The gateways' tracing environment: the sink's address, or every OTEL_ variable unset. */
const tracingEnv = sink
  ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }
  : Object.fromEntries(
      Object.keys(process.env)
        .filter((k) => k.startsWith('OTEL_'))
        .map((k) => [k, undefined]),
    );
const rounds = Number(values.rounds);
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const threads = Number(values.threads);
const drainTimeoutMs = Number(values['drain-timeout']) * 1000;
const log = (line) => process.stderr.write(`${line}\n`);
const storeDriver = values.store;
const replicaCount = Number(values.replicas);
if (!['sqlite', 'postgres'].includes(storeDriver) || !(replicaCount >= 1)) {
  log('--store must be sqlite or postgres, --replicas a whole number of at least 1');
  process.exit(2);
}
if (storeDriver === 'sqlite' && replicaCount > 1) {
  log('--replicas above 1 needs --store postgres (SQLite is one process per file)');
  process.exit(2);
}

const benchRoot = new URL('..', import.meta.url).pathname;
const hookTokenCount = Number(values['hook-tokens']);
if (!Number.isInteger(hookTokenCount) || hookTokenCount < 1) {
  log('--hook-tokens must be a whole number of at least 1');
  process.exit(2);
}
const DEFAULT_HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
/** The senders' tokens after hooks.token: as long as it, differing in their last characters. */
const SENDER_TOKENS = Array.from(
  { length: hookTokenCount - 1 },
  (_, i) => `bench-hook-${'x'.repeat(36)}${String(i).padStart(4, '0')}`,
);
const HOOK_TOKEN = SENDER_TOKENS.at(-1) ?? DEFAULT_HOOK_TOKEN;
const ADMIN_TOKEN = `bench-admin-${'y'.repeat(40)}`;
const scrapeMetrics = values['scrape-metrics'];

function gitRevision(dir) {
  const rev = spawnSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  if (rev.status !== 0) return 'not a git checkout';
  const dirty = spawnSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], {
    encoding: 'utf8',
  });
  return `${rev.stdout.trim()}${dirty.stdout.trim() ? '+uncommitted' : ''}`;
}

const gatewayDirs = (values['gateway-dir'] ?? [benchRoot]).map((dir) => resolve(dir));
// --with-budgets DIR: that gateway runs with budgets no load reaches (docs/budgets.md), one per
// scope the door checks, so their cost on the hook path shows beside a gateway without them.
const budgetDirs = new Set((values['with-budgets'] ?? []).map((dir) => resolve(dir)));
const BENCH_BUDGETS = [
  { id: 'all', perDay: { usd: 1_000_000, tokens: 1e15 } },
  { id: 'agent-hook', hook: 'agent', perHour: { tokens: 1e15 } },
  { id: 'bench-token', tokenId: 'default', perDay: { usd: 1_000_000 } },
  { id: 'main-agent', agent: 'main', perHour: { usd: 1_000_000 } },
];
for (const dir of gatewayDirs) {
  if (!existsSync(join(dir, 'dist/cli/main.js'))) {
    log(`no ${join(dir, 'dist/cli/main.js')}: run \`npm run build\` in ${dir} first`);
    process.exit(2);
  }
}

let generator = values.generator;
let generatorWarning = '';
if (generator === 'wrk') {
  const problem = ensureWrk(log);
  if (problem) {
    generator = 'autocannon';
    generatorWarning = `WARNING: ${problem}; falling back to autocannon, which shares the CPU with the servers — these figures are NOT comparable with wrk runs`;
    log(generatorWarning);
  }
} else if (generator !== 'autocannon') {
  log(`--generator must be wrk or autocannon, not ${generator}`);
  process.exit(2);
}

// Pinning needs two cores and taskset; without either, say so and run unpinned.
let pinned = values.pin === 'on';
if (pinned && (cpus().length < 2 || spawnSync('taskset', ['-V'], { stdio: 'ignore' }).error)) {
  log('pinning needs taskset and at least two cores; running unpinned');
  pinned = false;
}
const GENERATOR_CPU = pinned ? 0 : undefined;
const SERVER_CPU = pinned ? 1 : undefined;
// autocannon runs in this process, so this process goes where the generator goes.
if (pinned)
  spawnSync('taskset', ['-p', '-c', String(GENERATOR_CPU), String(process.pid)], { stdio: 'ignore' });

const work = mkdtempSync(join(tmpdir(), 'agentgate-bench-'));

/** A gateway under test: its own config and fresh store, and its samples. */
function gatewayOf(dir, index) {
  const home = join(work, `gateway-${index}`);
  mkdirSync(home);
  const configPath = join(home, 'agentgate.json5');
  const pg =
    storeDriver === 'postgres'
      ? pgDatabase(values['pg-url'], `agentgate_bench_${randomBytes(4).toString('hex')}`)
      : null;
  writeFileSync(
    configPath,
    JSON.stringify({
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
      hooks: {
        enabled: true,
        token: DEFAULT_HOOK_TOKEN,
        ...(SENDER_TOKENS.length > 0
          ? { tokens: SENDER_TOKENS.map((token, i) => ({ id: `sender-${i}`, token })) }
          : {}),
        defaultSessionKey: 'hook:bench',
        allowedSessionKeyPrefixes: ['hook:'],
      },
      models: { providers: { echo: { api: 'echo' } } },
      agents: { defaults: { model: 'echo/echo' } },
      ...(pg ? { store: { driver: 'postgres', url: pg.url } } : {}),
      ...(budgetDirs.has(dir) ? { budgets: BENCH_BUDGETS } : {}),
    }),
    { mode: 0o600 },
  );
  const revision = gitRevision(dir);
  return {
    dir,
    revision,
    name: `${gatewayDirs.length > 1 ? ` · ${basename(dir)}@${revision}` : ''}${budgetDirs.has(dir) ? ' · budgets' : ''}${pg ? ` · postgres${replicaCount > 1 ? ` ×${replicaCount} replicas` : ''}` : ''}`,
    pg,
    configPath,
    dbPath: join(home, 'state/agentgate.db'),
    samples: { wake: [], agent: [] },
    totals: { wake: { ok: 0, sent: 0, rejected: 0 }, agent: { ok: 0, sent: 0, rejected: 0 } },
    scrapes: [],
  };
}
const gateways = gatewayDirs.map(gatewayOf);
const servers = [];

function load(url, path, seconds) {
  const options = {
    url,
    path,
    seconds,
    connections,
    threads,
    cpu: GENERATOR_CPU,
    token: HOOK_TOKEN,
    tag: freshTag(),
    parts: BODY_TEMPLATES[path],
  };
  return generator === 'wrk' ? runWrk(options) : runAutocannon(options);
}

/** Loads every replica at once, the connections split evenly; one combined sample. */
async function loadAll(urls, path, seconds) {
  if (urls.length === 1) return load(urls[0], path, seconds);
  const share = Math.max(1, Math.round(connections / urls.length));
  const parts = await Promise.all(
    urls.map((url) =>
      (generator === 'wrk' ? runWrk : runAutocannon)({
        url,
        path,
        seconds,
        connections: share,
        threads,
        cpu: GENERATOR_CPU,
        token: HOOK_TOKEN,
        tag: freshTag(),
        parts: BODY_TEMPLATES[path],
      }),
    ),
  );
  const total = (key) => parts.reduce((acc, p) => acc + p[key], 0);
  return {
    rps: total('rps'),
    p50: total('p50') / parts.length,
    p99: Math.max(...parts.map((p) => p.p99)),
    ok: total('ok'),
    other: total('other'),
    sent: total('sent'),
  };
}

/**
 * Warm-up, then the measured run; every request counts for the commit check, warm-up
 * ones too. With `scrapes` (a gateway's list, under --scrape-metrics) /metrics is
 * scraped every second throughout.
 */
async function measure(target, path, totals, scrapes, pids = [], store = undefined) {
  const urls = Array.isArray(target) ? target : [target];
  const scraping = scrapes ? startScraping(urls, ADMIN_TOKEN) : undefined;
  const runs = warmup > 0 ? [await loadAll(urls, path, warmup)] : [];
  const finishedBefore = await store?.finishedRuns();
  const othersCpu = othersCpuWindow(servers.map((s) => s.child.pid));
  const serverCpu = serverCpuWindow(pids);
  runs.push(await loadAll(urls, path, duration));
  const cpuSeconds = serverCpu();
  const finishedAfter = await store?.finishedRuns();
  if (scraping) scrapes.push(await scraping.stop());
  const sample = { ...runs.at(-1), othersCpu: othersCpu() };
  // The gateway's CPU per answered request in the measured window (its run backlog's work included).
  const answered = sample.ok + sample.other;
  if (pids.length > 0 && cpuSeconds !== null && answered > 0)
    sample.cpuUsPerRequest = (cpuSeconds * 1e6) / answered;
  // The runs the worker executed during the window: their CPU is in the window's too.
  if (store && answered > 0) sample.runsPerRequest = (finishedAfter - finishedBefore) / answered;
  for (const r of totals ? runs : []) {
    totals.ok += r.ok;
    totals.sent += r.sent;
    totals.rejected += r.other;
  }
  return sample;
}

/**
 * Waits for the agent load's backlog, measuring the gateway's CPU per run drained; with it,
 * the last sample's CPU per request without the runs its window executed (an estimate: the
 * accepts' own cost, the figure that says whether the accept path changed).
 */
async function drainBacklog(g) {
  const sample = g.samples.agent.at(-1);
  const finishedBefore = await g.store.finishedRuns();
  const cpu = serverCpuWindow(g.pids);
  drains.push(await waitForIdleRuns(g.store, drainTimeoutMs));
  const cpuSeconds = cpu();
  const drained = (await g.store.finishedRuns()) - finishedBefore;
  if (cpuSeconds === null || drained === 0 || sample.cpuUsPerRequest === undefined) return {};
  const cpuUsPerRun = (cpuSeconds * 1e6) / drained;
  return { cpuUsPerRun, acceptCpuUsPerRequest: sample.cpuUsPerRequest - sample.runsPerRequest * cpuUsPerRun };
}

let exitCode = 0;
const baselineSamples = [];
const drains = [];
try {
  const baseline = await startServer('node', [join(benchRoot, 'bench/baseline-server.mjs')], {
    pattern: /listening on (\S+)/,
    cpu: SERVER_CPU,
  });
  servers.push(baseline);
  for (const g of gateways) {
    if (g.pg) await g.pg.create();
    // Replicas start at the same moment, as a deploy would start them (migrations race).
    const replicas = await Promise.all(
      Array.from({ length: g.pg ? replicaCount : 1 }, () =>
        startServer(
          'node',
          [join(g.dir, 'dist/cli/main.js'), 'run', '--config', g.configPath, '--port', '0'],
          {
            env: { AGENTGATE_LOG_LEVEL: 'warn', ...tracingEnv },
            pattern: /agentgate listening on (\S+)/,
            cpu: SERVER_CPU,
          },
        ),
      ),
    );
    servers.push(...replicas);
    const store = g.pg ? await openPgStore(g.pg.url) : openStore(g.dbPath);
    Object.assign(g, {
      server: replicas[0],
      urls: replicas.map((r) => r.url),
      pids: replicas.map((r) => r.child.pid),
      store,
    });
  }

  for (let round = 1; round <= rounds; round++) {
    // With several gateways, alternate who goes first so neither always follows the baseline.
    const order = round % 2 ? gateways : [...gateways].reverse();
    baselineSamples.push(await measure(baseline.url, '/hooks/wake'));
    const scrapesOf = (g) => (scrapeMetrics ? g.scrapes : undefined);
    for (const g of order)
      g.samples.wake.push(await measure(g.urls, '/hooks/wake', g.totals.wake, scrapesOf(g), g.pids));
    for (const g of order) {
      const sample = await measure(g.urls, '/hooks/agent', g.totals.agent, scrapesOf(g), g.pids, g.store);
      g.samples.agent.push(sample);
      Object.assign(sample, await drainBacklog(g));
    }
    const rps = (samples) => samples.at(-1).rps.toFixed(0);
    log(
      `round ${round}/${rounds}: baseline ${rps(baselineSamples)}, ${gateways.map((g) => `wake${g.name} ${rps(g.samples.wake)}, agent${g.name} ${rps(g.samples.agent)}`).join(', ')} req/s`,
    );
  }

  for (const server of servers.splice(0)) await stopServer(server.child);
  const checks = [];
  for (const g of gateways) {
    checks.push(commitCheck(`wake events${g.name}`, await g.store.committedWakes(), g.totals.wake));
    checks.push(commitCheck(`agent runs${g.name}`, await g.store.committedAgentRuns(), g.totals.agent));
    await g.store.close();
  }

  const cpu = cpus();
  const placement = pinned
    ? `${generator} on CPU ${GENERATOR_CPU}, servers on CPU ${SERVER_CPU} (taskset)`
    : 'unpinned';
  console.log(
    [
      '',
      ...gateways.map((g) => `gateway${g.name}: ${g.dir} (${g.revision})`),
      `machine: ${cpu.length} × ${cpu[0]?.model.trim()}, Node ${process.version}; generator: ${generator === 'wrk' ? `wrk ${wrkVersion()}, ${threads} thread(s)` : 'autocannon'}; ${placement}`,
      `load: ${connections} connections, ~1 KB JSON bodies with distinct ids, bearer token${hookTokenCount > 1 ? ` (the last of ${hookTokenCount} hook tokens)` : ''}; ${rounds} interleaved rounds of ${duration} s, each after ${warmup} s warm-up${scrapeMetrics ? '; GET /metrics scraped every second during every gateway load' : ''}`,
      ...(generatorWarning ? [generatorWarning] : []),
      '',
    ].join('\n'),
  );
  const targets = [
    { label: 'raw node:http', samples: baselineSamples },
    ...gateways.map((g) => ({ label: `gateway /hooks/wake${g.name}`, samples: g.samples.wake })),
    ...gateways.map((g) => ({ label: `gateway /hooks/agent${g.name}`, samples: g.samples.agent })),
  ];
  printTable(targets, baselineSamples);
  printAgentSplit(gateways);
  if (gateways.length > 1) printPairs(gateways);
  if (scrapeMetrics) {
    console.log('\n/metrics scrapes during the loads:');
    for (const g of gateways) console.log(`  gateway${g.name || ''}: ${scrapeSummary(g.scrapes)}`);
  }
  printNeighbours(targets);
  printDrains(drains, values['drain-timeout']);
  console.log('commit check (every 2xx answer committed; warm-up requests included):');
  for (const check of checks) console.log(`  ${check.text}`);
  if (checks.some((c) => !c.pass)) exitCode = 1;

  if (values.json) {
    const options = { generator, pinned, rounds, duration, warmup, connections, threads, scrapeMetrics };
    const results = targets.map(({ label, samples }) => ({ label, samples }));
    writeFileSync(
      values.json,
      `${JSON.stringify({ options, gateways: gatewayDirs, results, drains, checks }, null, 2)}\n`,
    );
  }
} finally {
  for (const server of servers) await stopServer(server.child);
  if (sink) {
    log(`tracing on: the OTLP receiver took ${sink.seen.requests} exports, ${sink.seen.bytes} bytes`);
    await sink.close();
  }
  for (const g of gateways)
    await g.pg?.drop().catch((error) => log(`dropping ${g.pg.url}: ${error.message}`));
  rmSync(work, { recursive: true, force: true });
}
process.exitCode = exitCode;
if (values.drain) {
  const passed = ['rounds', 'connections', 'threads', 'pg-url'].flatMap((name) => [
    `--${name}`,
    values[name],
  ]);
  for (const dir of values['gateway-dir'] ?? []) passed.push('--gateway-dir', dir);
  console.log('\n## Drain: accept rate against execute rate (bench/drain.mjs)');
  const drainCode = runDrain(passed);
  if (drainCode !== 0) process.exitCode = drainCode;
}

/**
 * Each gateway against the first, round by round (the same round's loads, so a slow
 * moment of the machine that hits both cancels out): the figure a before/after
 * comparison wants, e.g. without and with metrics.
 */
function printPairs(all) {
  const [first, ...others] = all;
  console.log('\ngateway CPU per answered request, median over rounds (µs):');
  for (const g of all) {
    const of = (path) => g.samples[path].map((s) => s.cpuUsPerRequest).filter((v) => v !== undefined);
    const text = (path) => (of(path).length ? median(of(path)).toFixed(1) : 'n/a');
    console.log(`  ${g.dir}@${g.revision}: wake ${text('wake')}, agent ${text('agent')}`);
  }
  console.log(`\nper-round ratios to the first gateway (${first.dir}@${first.revision}):`);
  for (const g of others) {
    for (const path of ['wake', 'agent']) {
      const paired = (metric) =>
        g.samples[path]
          .map((sample, i) => sample[metric] / first.samples[path][i][metric])
          .filter((ratio) => Number.isFinite(ratio))
          .sort((a, b) => a - b);
      const line = (ratios) =>
        ratios.length === 0
          ? 'n/a'
          : `median ${median(ratios).toFixed(3)} (rounds ${ratios.map((r) => r.toFixed(3)).join(', ')})`;
      console.log(`  ${path}: ${g.dir}@${g.revision}: req/s ${line(paired('rps'))}`);
      console.log(
        `  ${path}: ${g.dir}@${g.revision}: gateway CPU µs per request ${line(paired('cpuUsPerRequest'))}`,
      );
    }
  }
}
