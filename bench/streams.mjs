// Streamed answers against readers that do not read, and streams that wait
// (docs/performance.md, "Streamed answers"). Starts the real gateway (dist/, through its CLI)
// on a new SQLite store for each part, for each --gateway-dir given (before and after, in
// the same run, alternating their order per round):
//
//   1. readers: --readers bare TCP clients POST /hooks/agent with Accept: text/event-stream,
//      read the `accepted` event, then stop reading (the socket is paused: the bytes stay in
//      the kernel, then in the gateway). A loopback model streams each run a reply of --mib
//      MiB as fast as the gateway takes it; the runs execute side by side
//      (agents.defaults.maxConcurrent = --readers). The gateway's resident set is sampled
//      every 250 ms (/proc/<pid>/status): its peak (VmHWM), then its RSS once every run
//      finished and 20 s and 40 s later, with the JavaScript heap and the memory outside it
//      (buffers) the gateway reports (`nodejs_heap_size_used_bytes`,
//      `nodejs_external_memory_bytes` of GET /metrics), and how many of the streams'
//      connections the gateway still holds open then (ESTABLISHED on its port, /proc/net/tcp:
//      a paused client never sees the gateway close, so the client cannot count them).
//   2. waiting: --waiting streams wait on runs that stay queued (a model that holds its one
//      call, one worker slot), and read what comes (keep-alives). Once every stream is open,
//      the gateway's CPU (user + system, /proc/<pid>/stat) over --cpu-seconds.
//
// A gateway whose config schema knows `hooks.streams` (found with `agentgate config check`)
// is given caps above --waiting, so part 2 measures waiting, not refusals; its stall time is
// the default (30 s).
//
//   node bench/streams.mjs [--gateway-dir /work/before] [--gateway-dir .] [--readers 20]
//                          [--mib 12] [--waiting 500] [--cpu-seconds 10] [--rounds 1]
//                          [--parts readers,waiting] [--reading]
//
// --reading makes the readers of part 1 read everything (and count the bytes): what the
// runs themselves cost, beside which the never-reading readers' figures are read.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { serverCpuWindow } from './machine-load.mjs';
import { startServer, stopServer } from './processes.mjs';
import { startStallModel } from './stall-model.mjs';

const { values } = parseArgs({
  options: {
    'gateway-dir': { type: 'string', multiple: true, default: ['.'] },
    readers: { type: 'string', default: '20' },
    mib: { type: 'string', default: '12' },
    waiting: { type: 'string', default: '500' },
    'cpu-seconds': { type: 'string', default: '10' },
    rounds: { type: 'string', default: '1' },
    parts: { type: 'string', default: 'readers,waiting' },
    // Readers that read everything: what the runs cost by themselves, for comparison.
    reading: { type: 'boolean', default: false },
  },
});
const READERS = Number(values.readers);
const REPLY_BYTES = Number(values.mib) * 1024 * 1024;
const WAITING = Number(values.waiting);
const CPU_SECONDS = Number(values['cpu-seconds']);
const PARTS = new Set(values.parts.split(','));
const TOKEN = `bench-hook-${'x'.repeat(40)}`;
const ADMIN = `bench-admin-${'y'.repeat(40)}`;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

const kib = (status, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
const memory = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { peakMiB: kib(status, 'VmHWM') / 1024, rssMiB: kib(status, 'VmRSS') / 1024 };
};

/** The gateway's side (local port `port`) of the connections from `clientPorts` still ESTABLISHED. */
function establishedOn(port, clientPorts) {
  const hex = (n) => n.toString(16).toUpperCase().padStart(4, '0');
  const remotes = new Set(clientPorts.map(hex));
  let count = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, remote, state] = fields;
      if (state === '01' && local?.endsWith(`:${hex(port)}`) && remotes.has(remote?.split(':')[1]))
        count += 1;
    }
  }
  return count;
}

/** The gateway's own figures of its heap in use and its memory outside the heap, in MiB. */
async function heapOf(url) {
  const text = await (
    await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })
  ).text();
  const value = (name) =>
    Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN) / 1024 / 1024;
  return { heap: value('nodejs_heap_size_used_bytes'), external: value('nodejs_external_memory_bytes') };
}

/** A Chat Completions endpoint streaming every call a reply of REPLY_BYTES, in 16 KiB pieces, as fast as it is read. */
async function startBigModel() {
  const piece = 'x'.repeat(16 * 1024);
  const chunk = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let sent = 0; sent < REPLY_BYTES && !res.destroyed; sent += piece.length) {
        if (!res.write(chunk)) await new Promise((done) => res.once('drain', done));
      }
      res.end(
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
      );
    });
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(done);
      }),
  };
}

function configFor(dir, gatewayDir, { modelUrl, maxConcurrent }) {
  const config = {
    gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN } },
    hooks: { enabled: true, token: TOKEN, maxWaitSeconds: 600 },
    models: { providers: { bench: { api: 'openai-chat', baseUrl: modelUrl, apiKey: 'sk-bench' } } },
    agents: { defaults: { model: 'bench/m', maxConcurrent, heartbeat: { every: '0' } } },
    store: { driver: 'sqlite', path: join(dir, 'agentgate.db') },
  };
  const path = join(dir, 'agentgate.json5');
  const write = () => writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  // Caps above the bench's load, where the gateway knows them.
  config.hooks.streams = { maxPerToken: WAITING + 100, max: WAITING + 100 };
  write();
  const check = spawnSync(process.execPath, [
    join(gatewayDir, 'dist/cli/main.js'),
    'config',
    'check',
    '--config',
    path,
  ]);
  if (check.status !== 0) {
    delete config.hooks.streams;
    write();
  }
  return { path, caps: check.status === 0 };
}

async function startGateway(gatewayDir, options) {
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-streams-'));
  const { path, caps } = configFor(dir, gatewayDir, options);
  const { child, url } = await startServer(
    process.execPath,
    [join(gatewayDir, 'dist/cli/main.js'), 'run', '--config', path],
    {
      env: { AGENTGATE_LOG_LEVEL: 'warn' },
      pattern: /agentgate listening on (\S+)/,
    },
  );
  return { child, url, caps, dir };
}

/** A streamed answer's client on a bare socket; `onAccepted` once the `accepted` event arrived. */
function openStream(url, message, { pauseAfterAccepted }) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const body = JSON.stringify({ message, deliver: false, wakeMode: 'next-heartbeat' });
  socket.write(
    `POST /hooks/agent HTTP/1.1\r\nhost: ${hostname}:${port}\r\nauthorization: Bearer ${TOKEN}\r\n` +
      `accept: text/event-stream\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const stream = { socket, runId: undefined, status: undefined, closed: false, port: undefined };
  socket.once('connect', () => {
    stream.port = socket.localPort;
  });
  let text = '';
  stream.accepted = new Promise((done, fail) => {
    socket.on('data', (chunk) => {
      if (stream.runId !== undefined) return;
      text += chunk.toString('latin1');
      stream.status ??= /^HTTP\/1\.1 (\d+)/.exec(text)?.[1];
      if (stream.status !== undefined && stream.status !== '200')
        fail(new Error(`answered ${stream.status}: ${text}`));
      const runId = /"runId":"([^"]+)"/.exec(text)?.[1];
      if (runId) {
        stream.runId = runId;
        if (pauseAfterAccepted) socket.pause();
        done();
      }
    });
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    stream.closed = true;
  });
  return stream;
}

async function runStatus(url, runId) {
  const answer = await fetch(`${url}/hooks/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return (await answer.json()).status;
}

async function readersPart(gatewayDir) {
  const model = await startBigModel();
  const gw = await startGateway(gatewayDir, { modelUrl: model.url, maxConcurrent: READERS });
  const streams = [];
  try {
    const before = memory(gw.child.pid);
    for (let i = 0; i < READERS; i++)
      streams.push(openStream(gw.url, `reader ${i}`, { pauseAfterAccepted: !values.reading }));
    await Promise.all(streams.map((s) => s.accepted));
    const started = performance.now();
    let finished = false;
    while (!finished) {
      await sleep(250);
      const statuses = await Promise.all(streams.map((s) => runStatus(gw.url, s.runId)));
      finished = statuses.every((status) => status === 'succeeded' || status === 'failed');
      if (performance.now() - started > 600_000) throw new Error('the runs did not finish in 10 minutes');
    }
    const runsSeconds = (performance.now() - started) / 1000;
    const port = Number(new URL(gw.url).port);
    const clientPorts = streams.map((s) => s.port);
    const sample = async () => ({
      ...memory(gw.child.pid),
      ...(await heapOf(gw.url)),
      open: establishedOn(port, clientPorts),
    });
    const show = (m) =>
      `RSS ${m.rssMiB.toFixed(0)} MiB (heap ${m.heap.toFixed(0)}, buffers ${m.external.toFixed(0)}), ${m.open} streams open`;
    const atEnd = await sample();
    await sleep(20_000);
    const after20 = await sample();
    await sleep(20_000);
    const after40 = await sample();
    return {
      line:
        `${READERS} ${values.reading ? 'reading' : 'never-reading'} readers × ${values.mib} MiB in ${runsSeconds.toFixed(1)} s: RSS before ${before.rssMiB.toFixed(0)} MiB, ` +
        `peak ${after40.peakMiB.toFixed(0)} MiB; runs ended: ${show(atEnd)}; +20 s: ${show(after20)}; +40 s: ${show(after40)}`,
    };
  } finally {
    for (const s of streams) s.socket.destroy();
    await stopServer(gw.child);
    await model.close();
    rmSync(gw.dir, { recursive: true, force: true });
  }
}

async function waitingPart(gatewayDir) {
  const model = await startStallModel();
  const gw = await startGateway(gatewayDir, { modelUrl: model.url, maxConcurrent: 1 });
  const streams = [];
  try {
    for (let i = 0; i < WAITING; i++) {
      streams.push(openStream(gw.url, `waiting ${i}`, { pauseAfterAccepted: false }));
      // A few at a time, as clients arrive; the listen backlog is not what is measured.
      if (i % 50 === 49) await Promise.all(streams.slice(-50).map((s) => s.accepted));
    }
    await Promise.all(streams.map((s) => s.accepted));
    await sleep(1000);
    const window = serverCpuWindow([gw.child.pid]);
    await sleep(CPU_SECONDS * 1000);
    const cpuSeconds = window();
    const open = streams.filter((s) => !s.closed).length;
    return {
      line: `${WAITING} streams waiting on queued runs (${open} open): gateway CPU ${((100 * cpuSeconds) / CPU_SECONDS).toFixed(1)} % of a core over ${CPU_SECONDS} s`,
    };
  } finally {
    for (const s of streams) s.socket.destroy();
    model.release();
    await stopServer(gw.child);
    await model.close();
    rmSync(gw.dir, { recursive: true, force: true });
  }
}

const dirs = values['gateway-dir'].map((dir) => resolve(dir));
for (let round = 0; round < Number(values.rounds); round++) {
  const order = round % 2 === 0 ? dirs : [...dirs].reverse();
  for (const dir of order) {
    if (PARTS.has('readers')) console.log(`round ${round + 1} ${dir}: ${(await readersPart(dir)).line}`);
    if (PARTS.has('waiting')) console.log(`round ${round + 1} ${dir}: ${(await waitingPart(dir)).line}`);
  }
}
