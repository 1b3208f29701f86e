// End-to-end latency the gateway adds around a provider call.
//
// A loopback OpenAI-compatible provider (answers at once) and a loopback
// Telegram Bot API stand in for the outside world. Two ways to get a reply into
// a chat are timed, one request at a time:
//   direct  — the client calls the provider, then Telegram's sendMessage itself;
//   gateway — the client POSTs /hooks/agent and waits until Telegram receives
//             the reply (accept + commit + queue + provider call + completion
//             commit + delivery).
// The difference is the gateway's overhead.
//
//   npm run bench:latency -- [--requests 300]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '300' } } });
const N = Number(values.requests);
const HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
const BOT = '1000:bench-bot-token';
const root = new URL('..', import.meta.url).pathname;

const readJson = (req) =>
  new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
  });
const listen = (server) =>
  new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)),
  );

// Provider: echoes the tag of the last user message at once.
const provider = createServer(async (req, res) => {
  const body = await readJson(req);
  const last = body.messages.filter((m) => m.role === 'user').at(-1).content;
  const tag = /tag=(\w+)/.exec(last)?.[1] ?? 'none';
  const answer = JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content: `done ${tag}` }, finish_reason: 'stop' }],
  });
  res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
});

// Telegram: resolves the waiter registered for the tag in the text.
const waiters = new Map();
let messageId = 0;
const telegram = createServer(async (req, res) => {
  const body = await readJson(req);
  const tag = /done (\w+)/.exec(body.text)?.[1];
  messageId++;
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      ok: true,
      result: { message_id: messageId, date: 0, chat: { id: body.chat_id }, text: body.text },
    }),
  );
  waiters.get(tag)?.();
  waiters.delete(tag);
});

const providerUrl = await listen(provider);
const telegramUrl = await listen(telegram);
const delivered = (tag) => new Promise((resolve) => waiters.set(tag, resolve));

const dir = mkdtempSync(join(tmpdir(), 'agentgate-latency-'));
const configPath = join(dir, 'agentgate.json5');
writeFileSync(
  configPath,
  JSON.stringify({
    gateway: { port: 0, auth: { token: `bench-admin-${'y'.repeat(40)}` } },
    hooks: { enabled: true, token: HOOK_TOKEN },
    models: { providers: { bench: { api: 'openai-chat', baseUrl: `${providerUrl}/v1` } } },
    agents: { defaults: { model: 'bench/model', heartbeat: { every: '0' } } },
    channels: { telegram: { botToken: BOT, apiBaseUrl: telegramUrl } },
  }),
  { mode: 0o600 },
);

const gateway = spawn(
  'node',
  [join(root, 'dist/cli/main.js'), 'run', '--config', configPath, '--port', '0'],
  {
    env: { ...process.env, AGENTGATE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const gatewayUrl = await new Promise((resolve) => {
  let out = '';
  gateway.stdout.on('data', (chunk) => {
    out += chunk;
    const match = /agentgate listening on (\S+)/.exec(out);
    if (match) resolve(match[1]);
  });
});

async function direct(tag) {
  const completion = await fetch(`${providerUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'model', messages: [{ role: 'user', content: `tag=${tag}` }] }),
  }).then((r) => r.json());
  const text = completion.choices[0].message.content;
  const arrived = delivered(tag);
  await fetch(`${telegramUrl}/bot${BOT}/sendMessage`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chat_id: 1, text }),
  }).then((r) => r.json());
  await arrived;
}

async function viaGateway(tag) {
  const arrived = delivered(tag);
  const answer = await fetch(`${gatewayUrl}/hooks/agent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    body: JSON.stringify({ message: `tag=${tag}`, channel: 'telegram', to: '1', wakeMode: 'next-heartbeat' }),
  });
  if (answer.status !== 202) throw new Error(`gateway answered ${answer.status}`);
  await arrived;
}

async function time(label, fn) {
  for (let i = 0; i < 20; i++) await fn(`warm${label}${i}`);
  const samples = [];
  for (let i = 0; i < N; i++) {
    const start = performance.now();
    await fn(`${label}${i}`);
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  return { label, p50: at(0.5), p95: at(0.95), p99: at(0.99), mean: samples.reduce((a, b) => a + b, 0) / N };
}

try {
  const rows = [await time('direct', direct), await time('gateway', viaGateway)];
  const fmt = (ms) => ms.toFixed(2);
  console.log(
    `\n${N} sequential requests each; provider and Telegram are loopback fakes answering at once\n`,
  );
  console.log('| path | p50 ms | p95 ms | p99 ms | mean ms |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const r of rows)
    console.log(`| ${r.label} | ${fmt(r.p50)} | ${fmt(r.p95)} | ${fmt(r.p99)} | ${fmt(r.mean)} |`);
  const [d, g] = rows;
  console.log(
    `| overhead added by the gateway | ${fmt(g.p50 - d.p50)} | ${fmt(g.p95 - d.p95)} | ${fmt(g.p99 - d.p99)} | ${fmt(g.mean - d.mean)} |`,
  );
} finally {
  gateway.kill('SIGTERM');
  provider.close();
  telegram.close();
  rmSync(dir, { recursive: true, force: true });
}
