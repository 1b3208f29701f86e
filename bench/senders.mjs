// What signed senders cost (docs/senders.md): the signature check per request in µs for each
// kind, over a 2 KB and a 64 KB body; and at the door, a request a mapping's filter turns away
// against one it accepts (same mapping, same signature, same size), in CPU per request and
// requests/s, in interleaved rounds. The gateway runs in this process, from dist/, on SQLite
// with the product's default durability (a commit waits for its WAL sync, as a real one does).
// The client is in the same process and costs both kinds alike.
//
//   npm run build && node bench/senders.mjs [--requests 4000] [--rounds 3]
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfigFile } from '../dist/config/load.js';
import { createLogger } from '../dist/log.js';
import { verifySignature } from '../dist/senders/index.js';
import { startGateway } from '../dist/server/gateway.js';
import { median, range } from './stats.mjs';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '4000' },
    rounds: { type: 'string', default: '3' },
  },
});
const REQUESTS = Number(args.requests);
const ROUNDS = Number(args.rounds);
const IN_FLIGHT = 32;
const SECRET = randomBytes(24).toString('hex');

const fmt = (values, digits) => {
  const { min, max } = range(values);
  return `${median(values).toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})`;
};

// ── the signature check alone ──────────────────────────────────────────────

const hex = (body) => createHmac('sha256', SECRET).update(body).digest('hex');
const SIGNED = {
  github: (body) => ({ 'x-hub-signature-256': `sha256=${hex(body)}` }),
  stripe: (body, now) => {
    const t = Math.floor(now / 1000);
    return {
      'stripe-signature': `t=${t},v1=${createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex')}`,
    };
  },
  slack: (body, now) => {
    const t = Math.floor(now / 1000);
    return {
      'x-slack-request-timestamp': String(t),
      'x-slack-signature': `v0=${createHmac('sha256', SECRET).update(`v0:${t}:`).update(body).digest('hex')}`,
    };
  },
  gitlab: () => ({ 'x-gitlab-token': SECRET }),
  shopify: (body) => ({
    'x-shopify-hmac-sha256': createHmac('sha256', SECRET).update(body).digest('base64'),
  }),
  linear: (body) => ({ 'linear-signature': hex(body) }),
};

function signatureMicros(kind, size) {
  const now = Date.now();
  const payload = { webhookTimestamp: now, pad: 'x'.repeat(size) };
  const body = Buffer.from(JSON.stringify(payload));
  const request = { headers: SIGNED[kind](body, now), body, payload, now };
  const settings = { kind, secret: SECRET };
  const check = () => {
    if (!verifySignature(settings, request).ok) throw new Error(`${kind}: the bench's signature was refused`);
  };
  const n = size > 10_000 ? 2_000 : 20_000;
  for (let i = 0; i < n / 10; i++) check();
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) check();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

console.log('signature check, µs of CPU per request: median (range) over rounds');
for (const size of [2_000, 64_000]) {
  for (const kind of Object.keys(SIGNED)) {
    const samples = Array.from({ length: ROUNDS }, () => signatureMicros(kind, size));
    console.log(`  ${kind.padEnd(8)} ${String(size / 1000).padStart(3)} KB body  ${fmt(samples, 2)} µs`);
  }
}

// ── filtered against accepted, at the door ─────────────────────────────────

const dir = mkdtempSync(join(tmpdir(), 'agentgate-bench-senders-'));
const configPath = join(dir, 'agentgate.json5');
writeFileSync(
  configPath,
  JSON.stringify({
    gateway: { bind: '127.0.0.1', port: 0, auth: { token: randomBytes(24).toString('hex') } },
    hooks: {
      enabled: true,
      token: randomBytes(24).toString('hex'),
      mappings: [
        {
          id: 'github',
          match: { path: 'github' },
          auth: 'signature',
          verify: { kind: 'github', secret: SECRET },
          filter: {
            all: [
              { header: 'x-github-event', equals: 'pull_request' },
              { path: 'action', in: ['opened'] },
            ],
          },
          messageTemplate: 'PR {{number}}: {{pull_request.title}}',
        },
      ],
    },
    models: { providers: { echo: { api: 'echo' } } },
    agents: { defaults: { model: 'echo/echo' } },
  }),
  { mode: 0o600 },
);
const loaded = loadConfigFile(configPath, process.env);
if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
const gateway = await startGateway(loaded.config, createLogger('silent'), { port: 0, workers: false });
const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT * 2 });
let serial = 0;

/** One signed delivery: `pull_request` (accepted) or `push` (filtered), ~1 KB, a fresh id each. */
function deliver(event) {
  const id = serial++;
  const body = JSON.stringify({
    action: 'opened',
    number: id,
    pull_request: { title: `change ${id}`, body: 'y'.repeat(900) },
  });
  return new Promise((resolve, reject) => {
    const req = request(`${gateway.url}/hooks/github`, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': `d-${id}`,
        'x-hub-signature-256': `sha256=${hex(body)}`,
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function load(event, expected) {
  let sent = 0;
  const started = performance.now();
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (sent++ < REQUESTS) {
        const status = await deliver(event);
        if (status !== expected) throw new Error(`${event}: expected ${expected}, got ${status}`);
      }
    }),
  );
  const used = process.cpuUsage(before);
  const seconds = (performance.now() - started) / 1000;
  return { cpuMicros: (used.user + used.system) / REQUESTS, perSecond: REQUESTS / seconds };
}

try {
  await load('push', 200); // warm-up
  const samples = { filtered: [], accepted: [] };
  for (let round = 0; round < ROUNDS; round++) {
    samples.filtered.push(await load('push', 200));
    samples.accepted.push(await load('pull_request', 202));
  }
  console.log(
    `\nat the door: ${REQUESTS} signed deliveries per sample, ${IN_FLIGHT} in flight, ${ROUNDS} rounds`,
  );
  for (const [name, list] of Object.entries(samples)) {
    console.log(
      `  ${name.padEnd(9)} ${fmt(
        list.map((s) => s.cpuMicros),
        0,
      )} µs CPU/request (client included)   ${fmt(
        list.map((s) => s.perSecond),
        0,
      )} req/s`,
    );
  }
  const ratios = samples.filtered.map((f, i) => f.cpuMicros / samples.accepted[i].cpuMicros);
  console.log(
    `  filtered ÷ accepted, CPU per request, per round: ${ratios.map((r) => r.toFixed(2)).join(', ')}`,
  );
} finally {
  agent.destroy();
  await gateway.stop();
  rmSync(dir, { recursive: true, force: true });
}
