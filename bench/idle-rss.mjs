#!/usr/bin/env node
// How much memory an idle `agentgate run` holds, next to a bare `node` process measured in the
// same round (docs/performance.md, "Start-up and idle memory"). Each round starts the gateway as
// the README's quick start does — no config file, so `run` writes its starter config (SQLite
// store, hooks on, the echo provider) into a fresh temp home — on a free port, waits for
// `/readyz` to answer 200, waits `--settle` seconds more, and reads VmRSS, RssAnon and RssFile
// (/proc/<pid>/status) and the PSS (/proc/<pid>/smaps_rollup). A bare
// `node -e "setInterval(() => {}, 1e9)"` started in the same round is read after the same wait.
// It builds nothing: it runs <checkout>/dist, so `npm run build` first. It is a benchmark, not
// a test: it asserts nothing about the figures.
//
//   node bench/idle-rss.mjs [--rounds 5] [--settle 5] [--gateway-dir <checkout>]…
//                           [--node-option <flag>]… [--json <file>]
//
// With several --gateway-dir the checkouts take turns in every round; --node-option flags go to
// the gateway's `node` (e.g. a V8 flag being tried), not to the bare process.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stopServer } from './processes.mjs';
import { median } from './stats.mjs';

const { values: options } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    settle: { type: 'string', default: '5' },
    'gateway-dir': { type: 'string', multiple: true },
    'node-option': { type: 'string', multiple: true, default: [] },
    json: { type: 'string' },
  },
});
const rounds = Number(options.rounds);
const settleMs = Number(options.settle) * 1000;
const checkouts = (options['gateway-dir'] ?? ['.']).map((dir) => resolve(dir));
const READY_TIMEOUT_MS = 60_000;

/**
 * The quick start's environment: a fresh home with no config, and none of the variables that
 * would make the starter config or the gateway differ (a provider key picks another model,
 * an OTLP endpoint turns tracing on).
 */
function quickStartEnv(home) {
  const env = { ...process.env, HOME: home };
  for (const name of Object.keys(env)) {
    if (/^(AGENTGATE_|OTEL_)/.test(name) || name === 'OPENAI_API_KEY' || name === 'ANTHROPIC_API_KEY') {
      delete env[name];
    }
  }
  return env;
}

/** A port nothing listens on right now (the starter config's 18790 may be taken on a shared machine). */
function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

/** Polls /readyz until it answers 200; fails if the gateway exits first. */
async function waitReady(child, port) {
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline && !exited) {
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (answer) => answer.status,
      () => 0,
    );
    if (status === 200) return;
    await sleep(50);
  }
  throw new Error(exited ? 'the gateway exited before it was ready' : 'the gateway never became ready');
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** kB figures of /proc/<pid>/status and smaps_rollup, in MiB. */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (text, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text)?.[1]);
  return {
    rss: kib(status, 'VmRSS') / 1024,
    anon: kib(status, 'RssAnon') / 1024,
    file: kib(status, 'RssFile') / 1024,
    pss: kib(rollup, 'Pss') / 1024,
    threads: Number(/^Threads:\s+(\d+)$/m.exec(status)?.[1]),
  };
}

/** Starts the child, waits until `ready` resolves and `settleMs` more, reads its memory, stops it. */
async function measure(command, args, env, ready) {
  let output = '';
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  try {
    await ready(child);
    await sleep(settleMs);
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}`);
    return memoryOf(child.pid);
  } catch (error) {
    throw new Error(`${args.join(' ')}: ${error.message}\n${output}`);
  } finally {
    await stopServer(child);
  }
}

async function gatewayRound(checkout) {
  const home = mkdtempSync(join(tmpdir(), 'agentgate-idle-rss-'));
  try {
    const port = await freePort();
    const args = [
      ...options['node-option'],
      join(checkout, 'dist/cli/main.js'),
      'run',
      '--port',
      String(port),
    ];
    return await measure(process.execPath, args, quickStartEnv(home), (child) => waitReady(child, port));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const bareRound = () =>
  measure(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], process.env, () => sleep(200));

const samples = new Map([['bare node', []], ...checkouts.map((checkout) => [checkout, []])]);
for (let round = 0; round < rounds; round++) {
  // Alternate the order, so no target always runs first in a round.
  const targets = [...samples.keys()];
  for (const target of round % 2 ? targets.reverse() : targets) {
    const sample = target === 'bare node' ? await bareRound() : await gatewayRound(target);
    samples.get(target).push(sample);
  }
  process.stderr.write(`round ${round + 1}/${rounds} done\n`);
}

const spread = (values, digits = 1) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
const bare = samples.get('bare node');
console.log(`${rounds} rounds, read ${settleMs / 1000} s after ready; MiB, median (min–max)\n`);
console.log(
  '| process | VmRSS | RssAnon | RssFile | PSS | threads | VmRSS − bare node | VmRSS ÷ bare node |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const [target, list] of samples) {
  const of = (field) => list.map((sample) => sample[field]);
  // Each round's gateway against the same round's bare process.
  const over = list.map((sample, i) => sample.rss - bare[i].rss);
  const ratio = list.map((sample, i) => sample.rss / bare[i].rss);
  console.log(
    `| ${target} | ${spread(of('rss'))} | ${spread(of('anon'))} | ${spread(of('file'))} | ${spread(of('pss'))} | ` +
      `${spread(of('threads'), 0)} | ${spread(over)} | ${spread(ratio, 2)} |`,
  );
}
if (options.json) writeFileSync(options.json, JSON.stringify(Object.fromEntries(samples), null, 2));
