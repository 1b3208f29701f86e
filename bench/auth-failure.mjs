// What a failed authentication costs: the time to a 401 for a wrong hook token
// on one process (SQLite: the count is in memory) and on two replicas sharing
// PostgreSQL (the failure is counted in the shared ledger before the 401 is
// sent), one request at a time and with 32 in flight. Every failure comes from
// its own address (X-Forwarded-For behind a trusted loopback proxy), so none is
// locked and each is counted. Gateways run in this process, from dist/.
//
//   npm run build && node bench/auth-failure.mjs [--url postgres://postgres@127.0.0.1:5432/postgres]
//                                                [--requests 3000] [--rounds 3]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfigFile } from '../dist/config/load.js';
import { createLogger } from '../dist/log.js';
import { startGateway } from '../dist/server/gateway.js';
import { median, range } from './stats.mjs';
import { pgDatabase } from './store-check.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    requests: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '3' },
  },
});
const REQUESTS = Number(args.requests);
const ROUNDS = Number(args.rounds);
const IN_FLIGHT = 32;
const BODY = JSON.stringify({ text: 'guess' });

async function gateway(dir, store) {
  const path = join(dir, 'agentgate.json5');
  const config = {
    gateway: {
      bind: '127.0.0.1',
      port: 0,
      auth: { token: randomBytes(24).toString('hex') },
      trustedProxies: ['127.0.0.1/8'],
    },
    hooks: { enabled: true, token: randomBytes(24).toString('hex') },
    models: { providers: { echo: { api: 'echo' } } },
    agents: { defaults: { model: 'echo/echo' } },
    ...(store ? { store } : {}),
  };
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  const loaded = loadConfigFile(path, process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  return startGateway(loaded.config, createLogger('silent'), { port: 0, workers: false });
}

const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT * 2 });
let next = 0;
/** One wrong-token wake from a fresh address; resolves to [status, ms]. */
function guess(url) {
  const i = next++;
  const from = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(`${url}/hooks/wake`, {
      method: 'POST',
      agent,
      headers: { authorization: 'Bearer wrong', 'content-type': 'application/json', 'x-forwarded-for': from },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve([res.statusCode, performance.now() - started]));
    });
    req.on('error', reject);
    req.end(BODY);
  });
}

/** `REQUESTS` failures spread over `urls` in turn, `inFlight` at a time: latencies and failures/s. */
async function measure(urls, inFlight) {
  const latencies = [];
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (sent < REQUESTS) {
        const [status, ms] = await guess(urls[sent++ % urls.length]);
        if (status !== 401) throw new Error(`expected 401, got ${status}`);
        latencies.push(ms);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { p50: at(0.5), p99: at(0.99), perSecond: REQUESTS / seconds };
}

const dir = mkdtempSync(join(tmpdir(), 'agentgate-bench-auth-'));
const database = pgDatabase(args.url, `agentgate_bench_${randomBytes(6).toString('hex')}`);
await database.create();
const running = [];
try {
  const sqliteDir = mkdtempSync(join(dir, 'sqlite-'));
  const sqlite = await gateway(sqliteDir);
  running.push(sqlite);
  const store = { driver: 'postgres', url: database.url };
  const replicas = [
    await gateway(mkdtempSync(join(dir, 'pg-')), store),
    await gateway(mkdtempSync(join(dir, 'pg-')), store),
  ];
  running.push(...replicas);
  const targets = { 'SQLite, 1 process': [sqlite.url], 'PostgreSQL, 2 replicas': replicas.map((r) => r.url) };
  const samples = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, urls] of Object.entries(targets)) {
      for (const inFlight of [1, IN_FLIGHT]) {
        const key = `${name}, ${inFlight} in flight`;
        samples[key] ??= [];
        samples[key].push(await measure(urls, inFlight));
      }
    }
  }
  const fmt = (values, digits) => {
    const { min, max } = range(values);
    return `${median(values).toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})`;
  };
  console.log(`${REQUESTS} wrong-token requests per sample, ${ROUNDS} rounds; median (range) over rounds`);
  for (const [key, list] of Object.entries(samples)) {
    console.log(
      `${key.padEnd(40)} p50 ${fmt(
        list.map((s) => s.p50),
        2,
      )} ms   p99 ${fmt(
        list.map((s) => s.p99),
        2,
      )} ms   ${fmt(
        list.map((s) => s.perSecond),
        0,
      )} failures/s`,
    );
  }
} finally {
  for (const gw of running) await gw.stop();
  agent.destroy();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
}
