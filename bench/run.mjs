// Loads a raw node:http baseline and the real gateway (started through its CLI)
// in the same run, with the same client, connections and bodies, and reports
// requests/s, p50/p99 latency and the ratio to the baseline. Targets are
// measured in alternating rounds (baseline, wake, agent, baseline, ...) and the
// median of each is reported, so a noisy moment on a small machine does not
// decide the ratio. Afterwards it checks that every 2xx answer was committed.
//
//   npm run bench -- [--duration 10] [--connections 64] [--rounds 3]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const warmup = Number(values.warmup);
const rounds = Number(values.rounds);

const HOOK_TOKEN = `bench-hook-${'x'.repeat(40)}`;
const root = new URL('..', import.meta.url).pathname;

/** A realistic ~1 KB webhook text; each request gets a distinct one so wakes never coalesce. */
function realisticText(id) {
  const detail = {
    repository: 'acme/payments-service',
    workflow: 'ci.yml',
    run: id,
    conclusion: 'failure',
    branch: 'main',
    commit: { sha: '3f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e', author: 'dev@example.com' },
    failedJobs: ['unit-tests (node 20)', 'integration (postgres)'],
    url: `https://ci.example.com/acme/payments-service/runs/${id}`,
  };
  const text = `CI run ${id} failed on main: ${JSON.stringify(detail)}`;
  return text.padEnd(900, ' .');
}
const VARIANTS = 4096;
const bodies = (make) =>
  Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(make(`${Date.now()}-${i}`)));
const wakeBodies = bodies((id) => ({ text: realisticText(id), mode: 'now' }));
const agentBodies = bodies((id) => ({
  message: realisticText(id),
  name: 'CI',
  wakeMode: 'next-heartbeat',
  deliver: false,
}));

function start(command, args, env, pattern) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const onData = (chunk) => {
      output += chunk;
      const match = pattern.exec(output);
      if (match) resolve({ child, url: match[1] });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}:\n${output}`)));
  });
}

function stop(child) {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.on('exit', resolve);
    child.kill('SIGTERM');
  });
}

let sent = 0;
async function load(url, path, variants, seconds) {
  return autocannon({
    url: `${url}${path}`,
    connections,
    duration: seconds,
    pipelining: 1,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${HOOK_TOKEN}` },
        setupRequest: (request) => ({ ...request, body: variants[sent++ % VARIANTS] }),
      },
    ],
  });
}

async function measure(label, url, path, body) {
  if (warmup > 0) await load(url, path, body, warmup);
  const r = await load(url, path, body, duration);
  return {
    label,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: r['2xx'],
    other: r.non2xx + r.errors + r.timeouts,
  };
}

const dir = mkdtempSync(join(tmpdir(), 'agentgate-bench-'));
const configPath = join(dir, 'agentgate.json5');
writeFileSync(
  configPath,
  JSON.stringify({
    gateway: { bind: '127.0.0.1', port: 0, auth: { token: `bench-admin-${'y'.repeat(40)}` } },
    hooks: {
      enabled: true,
      token: HOOK_TOKEN,
      defaultSessionKey: 'hook:bench',
      allowedSessionKeyPrefixes: ['hook:'],
    },
    models: { providers: { echo: { api: 'echo' } } },
    agents: { defaults: { model: 'echo/echo' } },
  }),
  { mode: 0o600 },
);

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function summarise(label, runs) {
  return {
    label,
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    ok: runs.reduce((sum, r) => sum + r.ok, 0),
    other: runs.reduce((sum, r) => sum + r.other, 0),
  };
}

const samples = { baseline: [], wake: [], agent: [] };
try {
  const baseline = await start('node', [join(root, 'bench/baseline-server.mjs')], {}, /listening on (\S+)/);
  const gateway = await start(
    'node',
    [join(root, 'dist/cli/main.js'), 'run', '--config', configPath, '--port', '0'],
    { AGENTGATE_LOG_LEVEL: 'warn' },
    /agentgate listening on (\S+)/,
  );
  for (let round = 1; round <= rounds; round++) {
    samples.baseline.push(await measure('raw node:http', baseline.url, '/hooks/wake', wakeBodies));
    samples.wake.push(await measure('gateway /hooks/wake', gateway.url, '/hooks/wake', wakeBodies));
    samples.agent.push(await measure('gateway /hooks/agent', gateway.url, '/hooks/agent', agentBodies));
    process.stderr.write(
      `round ${round}/${rounds}: baseline ${samples.baseline.at(-1).rps.toFixed(0)}, wake ${samples.wake.at(-1).rps.toFixed(0)}, agent ${samples.agent.at(-1).rps.toFixed(0)} req/s\n`,
    );
  }
  await stop(baseline.child);
  await stop(gateway.child);

  const db = new Database(join(dir, 'state/agentgate.db'), { readonly: true });
  const events = db.prepare('SELECT count(*) AS n FROM events').get().n;
  const runs = db.prepare('SELECT count(*) AS n FROM runs').get().n;
  db.close();

  const results = [
    summarise('raw node:http', samples.baseline),
    summarise('gateway /hooks/wake', samples.wake),
    summarise('gateway /hooks/agent', samples.agent),
  ];
  const base = results[0].rps;
  const row = (cells) => `| ${cells.join(' | ')} |`;
  console.log(
    `\n${connections} connections, ~1 KB JSON bodies, bearer token; median of ${rounds} alternating rounds of ${duration} s (each after ${warmup} s warm-up)\n`,
  );
  console.log(row(['target', 'requests/s', 'p50 ms', 'p99 ms', 'ratio to baseline', '2xx', 'other']));
  console.log(row(['---', '---:', '---:', '---:', '---:', '---:', '---:']));
  for (const r of results) {
    console.log(
      row([r.label, r.rps.toFixed(0), r.p50, r.p99, `${(r.rps / base).toFixed(2)}×`, r.ok, r.other]),
    );
  }
  const answered = (runs) => runs.reduce((sum, r) => sum + r.ok, 0);
  console.log(
    `\ncommitted: ${events} events for ≥ ${answered(samples.wake)} measured 2xx wake answers, ${runs} runs for ≥ ${answered(samples.agent)} measured 2xx agent answers (warm-up requests add to the store counts)`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
