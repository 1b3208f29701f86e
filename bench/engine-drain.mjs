// The engine alone, in one process, no HTTP: queue K echo runs in the store
// (through `accept`, batched as the ingress's group commit does), then start
// the run worker and time how long it takes to execute them all. Reports
// runs/s for distinct session keys and for one key, on SQLite and on
// PostgreSQL (a database of its own, dropped after), over several rounds.
// Meant for profiling the claim/complete path (`node --cpu-prof`); the
// end-to-end drain through the CLI and HTTP is bench/drain.mjs.
//
//   npm run build && node bench/engine-drain.mjs [--runs 20000] [--rounds 3]
//        [--store sqlite|postgres|both] [--keys distinct|one|both] [--concurrency 256]
//        [--pg-url postgres://postgres@127.0.0.1:5432/postgres] [--dist <dir>]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { median } from './stats.mjs';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    store: { type: 'string', default: 'both' },
    keys: { type: 'string', default: 'both' },
    concurrency: { type: 'string', default: '256' },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    dist: { type: 'string', default: 'dist' },
  },
});
const K = Number(values.runs);
const dist = pathToFileURL(`${resolve(values.dist)}/`).href;
const load = (path) => import(new URL(path, dist).href);
const { loadConfigFile } = await load('config/load.js');
const { ModelRouter } = await load('agents/models.js');
const { RunWorker } = await load('agents/worker.js');
const { SqliteStore } = await load('store/sqlite/sqlite-store.js');
const { PgStore } = await load('store/postgres/pg-store.js');
const pino = (await import('pino')).default;

const log = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'agentgate-engine-drain-'));
writeFileSync(
  join(dir, 'agentgate.json5'),
  JSON.stringify({
    hooks: { enabled: true, token: randomBytes(16).toString('hex') },
    gateway: { auth: { token: randomBytes(16).toString('hex') } },
    models: { providers: { echo: { api: 'echo' } } },
    agents: {
      defaults: {
        model: 'echo/echo',
        maxConcurrent: Number(values.concurrency),
        heartbeat: { every: '0' },
      },
    },
  }),
);
const loaded = loadConfigFile(join(dir, 'agentgate.json5'), {});
if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
const config = loaded.config;

async function queue(store, oneKey) {
  const batch = 500;
  for (let start = 0; start < K; start += batch) {
    const accepts = [];
    for (let i = start; i < Math.min(K, start + batch); i++) {
      const run = {
        id: `run_${i}_${randomBytes(4).toString('hex')}`,
        agentId: 'main',
        sessionKey: oneKey ? 'hook:one' : `hook:k${i}`,
        mainSessionKey: 'agent:main:main',
        name: null,
        message: `message ${i}`,
        model: null,
        thinking: null,
        timeoutSeconds: 600,
        wakeMode: 'next-heartbeat',
        deliver: false,
        channel: 'last',
        to: null,
        allowUnsafeExternalContent: false,
        source: 'hook:agent',
        createdAt: Date.now(),
      };
      accepts.push(store.accept([{ kind: 'agent', run }], () => ({ status: 202, body: '{}' })));
    }
    await Promise.all(accepts);
  }
}

async function drain(store) {
  let finished = 0;
  let done;
  const all = new Promise((r) => {
    done = r;
  });
  const worker = new RunWorker({
    store,
    config,
    models: new ModelRouter(config),
    log,
    owner: `bench:${process.pid}:${randomBytes(4).toString('hex')}`,
    onRunFinished: () => {
      if (++finished === K) done();
    },
  });
  const started = performance.now();
  await worker.start();
  await all;
  const seconds = (performance.now() - started) / 1000;
  await worker.stop(1000);
  return K / seconds;
}

async function pgDatabase() {
  const name = `agentgate_drain_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: values['pg-url'] });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(values['pg-url']);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: values['pg-url'] });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

async function measure(engine, oneKey) {
  if (engine === 'sqlite') {
    const store = new SqliteStore({ path: join(dir, `${randomBytes(4).toString('hex')}.db`) });
    await queue(store, oneKey);
    const rate = await drain(store);
    await store.close();
    return rate;
  }
  const db = await pgDatabase();
  const store = new PgStore({ url: db.url, poolMax: 10 });
  await store.ready;
  await queue(store, oneKey);
  const rate = await drain(store);
  await store.close();
  await db.drop();
  return rate;
}

const engines = values.store === 'both' ? ['sqlite', 'postgres'] : [values.store];
const keys = values.keys === 'both' ? ['distinct', 'one'] : [values.keys];
const results = new Map();
for (let round = 0; round < Number(values.rounds); round++) {
  for (const engine of engines) {
    for (const key of keys) {
      const rate = await measure(engine, key === 'one');
      const name = `${engine} ${key} key${key === 'one' ? '' : 's'}`;
      results.set(name, [...(results.get(name) ?? []), rate]);
      process.stderr.write(`round ${round + 1}: ${name}: ${rate.toFixed(0)} runs/s\n`);
    }
  }
}
console.log(`engine drain, ${K} echo runs, maxConcurrent ${values.concurrency}`);
for (const [name, rates] of results) {
  console.log(
    `${name.padEnd(24)} ${median(rates).toFixed(0).padStart(7)} runs/s  (${Math.min(...rates).toFixed(0)}–${Math.max(...rates).toFixed(0)})`,
  );
}
rmSync(dir, { recursive: true, force: true });
