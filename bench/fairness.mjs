// Fair sharing of worker slots between hooks (docs/callers.md, "Per-hook limits"),
// measured: floods one hook (a mapping) with --flood runs, waits until the flood
// holds every worker slot, then sends one run to another hook (/hooks/agent) and
// reports how long that run waited for a slot (startedAt − createdAt, read from the
// admin API) next to one run's duration (--run-ms, the fake model's answer time).
// Fair sharing keeps that wait under one run's duration; oldest-first claiming makes
// it the whole backlog (flood ÷ slots × run-ms).
//
// The model is a fake on loopback that answers the Chat Completions wire after
// --run-ms. The gateway is started through its CLI from each --gateway-dir
// (built there with `npm run build`), one after the other.
//
// --store postgres runs each gateway on a new PostgreSQL database (on the server of
// --pg-url, dropped after); --replicas 2 starts two replicas on it, the flood sent to
// both and the lone run to the first, so the slots are shared across replicas.
//
//   node bench/fairness.mjs [--flood 10000] [--run-ms 200] [--slots 4] [--concurrency 64]
//                           [--timeout 120] [--gateway-dir <checkout>]...
//                           [--store sqlite|postgres] [--replicas N] [--pg-url <admin url>]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startServer, stopServer } from './processes.mjs';
import { pgDatabase } from './store-check.mjs';

const { values } = parseArgs({
  options: {
    flood: { type: 'string', default: '10000' },
    'run-ms': { type: 'string', default: '200' },
    slots: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '64' },
    timeout: { type: 'string', default: '120' },
    'gateway-dir': { type: 'string', multiple: true },
    store: { type: 'string', default: 'sqlite' },
    replicas: { type: 'string', default: '1' },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const POSTGRES = values.store === 'postgres';
const REPLICAS = POSTGRES ? Number(values.replicas) : 1;
const FLOOD = Number(values.flood);
const RUN_MS = Number(values['run-ms']);
const SLOTS = Number(values.slots);
const CONCURRENCY = Number(values.concurrency);
const TIMEOUT_MS = Number(values.timeout) * 1000;
const HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
const ADMIN_TOKEN = `bench-admin-${'y'.repeat(40)}`;
const log = (line) => process.stderr.write(`${line}\n`);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const dirs = (values['gateway-dir'] ?? [new URL('..', import.meta.url).pathname]).map((dir) => resolve(dir));

/** A Chat Completions fake that answers after RUN_MS and counts the calls in flight. */
async function startModel() {
  const model = { inFlight: 0, calls: 0, lone: undefined };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      const last = JSON.stringify(body.messages?.at(-1) ?? '');
      if (last.includes('the lone run')) model.lone ??= Date.now();
      model.inFlight++;
      model.calls++;
      await sleep(RUN_MS);
      model.inFlight--;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${model.calls}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  model.url = `http://127.0.0.1:${server.address().port}/v1`;
  model.close = () => new Promise((done) => server.close(done));
  return model;
}

async function post(url, body, headers = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

async function measure(dir) {
  const model = await startModel();
  const home = mkdtempSync(join(tmpdir(), 'agentgate-fairness-'));
  const configPath = join(home, 'agentgate.json5');
  const database = POSTGRES ? pgDatabase(values['pg-url'], `agentgate_fair_${Date.now()}`) : undefined;
  await database?.create();
  writeFileSync(
    configPath,
    JSON.stringify({
      gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
      hooks: {
        enabled: true,
        token: HOOK_TOKEN,
        mappings: [
          {
            id: 'flood',
            match: { path: 'flood' },
            messageTemplate: 'flood {{n}}',
            deliver: false,
            wakeMode: 'next-heartbeat',
          },
        ],
      },
      models: { providers: { fake: { api: 'openai-chat', baseUrl: model.url, apiKey: 'sk-bench' } } },
      agents: { defaults: { model: 'fake/m', maxConcurrent: SLOTS, heartbeat: { every: '0' } } },
      ...(database ? { store: { driver: 'postgres', url: database.url } } : {}),
    }),
    { mode: 0o600 },
  );
  const servers = [];
  for (let i = 0; i < REPLICAS; i++) {
    servers.push(
      await startServer(process.execPath, [join(dir, 'dist/cli/main.js'), 'run', '--config', configPath], {
        pattern: /agentgate listening on (http:\/\/\S+)/,
      }),
    );
  }
  const url = servers[0].url;
  try {
    // 1. The flood, CONCURRENCY requests at a time.
    const floodStarted = Date.now();
    let next = 0;
    let accepted = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < FLOOD) {
          const n = next++;
          const target = servers[n % servers.length].url;
          if ((await post(`${target}/hooks/flood`, { n })).status === 202) accepted++;
        }
      }),
    );
    const floodSeconds = (Date.now() - floodStarted) / 1000;
    // 2. Every slot (of every replica) busy with the flood.
    while (model.inFlight < SLOTS * REPLICAS) await sleep(10);
    // 3. One run on another hook.
    const sent = Date.now();
    const lone = await post(`${url}/hooks/agent`, {
      message: 'the lone run',
      deliver: false,
      wakeMode: 'next-heartbeat',
      waitForCompletion: true,
    });
    const answeredMs = Date.now() - sent;
    const runId = lone.body?.runId;
    let view;
    for (const deadline = Date.now() + TIMEOUT_MS; Date.now() < deadline; await sleep(100)) {
      const response = await fetch(`${url}/api/runs/${runId}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      view = await response.json();
      if (view.startedAt) break;
    }
    const waitedMs = view?.startedAt ? Date.parse(view.startedAt) - Date.parse(view.createdAt) : undefined;
    return {
      dir,
      accepted,
      floodPerSecond: Math.round(accepted / floodSeconds),
      finishedBeforeLone: model.calls - SLOTS * REPLICAS,
      waitedMs,
      answeredMs: lone.status === 200 ? answeredMs : undefined,
      loneStatus: lone.status,
    };
  } finally {
    for (const { child } of servers) await stopServer(child);
    await model.close();
    await database?.drop();
    rmSync(home, { recursive: true, force: true });
  }
}

const where = POSTGRES ? `postgres, ${REPLICAS} replica(s)` : 'sqlite';
log(`flood ${FLOOD} runs on one hook, ${SLOTS} worker slots per replica, ${RUN_MS} ms per run (${where})`);
const results = [];
for (const dir of dirs) {
  log(`measuring ${dir} ...`);
  results.push(await measure(dir));
}
const fifoMs = Math.ceil(FLOOD / (SLOTS * REPLICAS)) * RUN_MS;
console.log(
  `\nFairness (${where}): one run on /hooks/agent after ${FLOOD} runs flooded one mapping (${SLOTS * REPLICAS} slots, ${RUN_MS} ms a run; oldest-first would wait ~${(fifoMs / 1000).toFixed(0)} s)\n`,
);
console.log(
  'gateway'.padEnd(40),
  'flood req/s'.padStart(12),
  'wait for a slot'.padStart(17),
  'ratio to a run'.padStart(15),
  'answer (wait)'.padStart(14),
);
for (const r of results) {
  const waited = r.waitedMs === undefined ? `> ${values.timeout} s` : `${r.waitedMs} ms`;
  const ratio = r.waitedMs === undefined ? '-' : (r.waitedMs / RUN_MS).toFixed(2);
  const answer = r.answeredMs === undefined ? `(${r.loneStatus})` : `${r.answeredMs} ms`;
  console.log(
    r.dir.slice(-40).padEnd(40),
    String(r.floodPerSecond).padStart(12),
    waited.padStart(17),
    ratio.padStart(15),
    answer.padStart(14),
  );
}
