#!/usr/bin/env node
// How fast `agentgate run` starts and how much memory the idle gateway holds
// (docs/performance.md, "Start-up and idle memory"). Each round starts the
// gateway on a fresh minimal config (SQLite store, hooks on with a token, the
// echo provider), times spawn → "agentgate listening on", waits, reads VmRSS
// from /proc, times a few short CLI commands, and times its stop (SIGTERM). With several
// --gateway-dir the checkouts take turns in every round, so a before/after
// comparison sees the same machine. It is a benchmark, not a test: it asserts
// nothing about the figures.
//
//   node bench/startup.mjs [--rounds 5] [--idle 10] [--gateway-dir <checkout>]… [--json <file>]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stopServer } from './processes.mjs';
import { median } from './stats.mjs';

const { values: options } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    idle: { type: 'string', default: '10' },
    'gateway-dir': { type: 'string', multiple: true },
    json: { type: 'string' },
  },
});
const rounds = Number(options.rounds);
const idleMs = Number(options.idle) * 1000;
const checkouts = (options['gateway-dir'] ?? ['.']).map((dir) => resolve(dir));

const HOOK_TOKEN = 'hook-token-0123456789abcdef0123456789';
const ADMIN_TOKEN = 'admin-token-0123456789abcdef012345678';
const LISTENING = /agentgate listening on (http:\/\/\S+)/;

/** A minimal config in a fresh temp dir; answers its path. */
function writeMinimalConfig() {
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-startup-'));
  const config = {
    gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
    hooks: { enabled: true, token: HOOK_TOKEN },
    models: { providers: { echo: { api: 'echo' } } },
    agents: { defaults: { model: 'echo/echo' } },
    store: { driver: 'sqlite' },
  };
  const path = join(dir, 'agentgate.json5');
  writeFileSync(path, JSON.stringify(config, null, 2), { mode: 0o600 });
  return { dir, path };
}

const cliOf = (checkout) => join(checkout, 'dist/cli/main.js');
const env = { ...process.env, AGENTGATE_LOG_LEVEL: 'warn' };

/** Spawns `agentgate run`; resolves with the child, its URL and the ms until the listening line. */
function startGateway(checkout, configPath) {
  const started = performance.now();
  const child = spawn(process.execPath, [cliOf(checkout), 'run', '--config', configPath], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((done, fail) => {
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = LISTENING.exec(output);
      if (match) done({ child, url: match[1], startMs: performance.now() - started });
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('exit', (code) => fail(new Error(`agentgate run exited ${code}:\n${output}`)));
  });
}

/** Runs one CLI command to its exit; resolves with its wall time in ms. */
function timeCli(checkout, args) {
  const started = performance.now();
  const child = spawn(process.execPath, [cliOf(checkout), ...args], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((done, fail) => {
    child.on('exit', (code) =>
      code === 0
        ? done(performance.now() - started)
        : fail(new Error(`agentgate ${args.join(' ')} exited ${code}: ${stderr}`)),
    );
  });
}

/** The resident set of a process, in MB (VmRSS of /proc/<pid>/status). */
function rssMb(pid) {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

const commands = (configPath, url) => ({
  '--help': ['--help'],
  'config check': ['config', 'check', '--config', configPath],
  status: ['status', '--config', configPath, '--url', url],
});

async function oneRound(checkout) {
  const { dir, path } = writeMinimalConfig();
  const gateway = await startGateway(checkout, path);
  try {
    await new Promise((done) => setTimeout(done, idleMs));
    const sample = { startMs: gateway.startMs, rssMb: rssMb(gateway.child.pid) };
    for (const [name, args] of Object.entries(commands(path, gateway.url))) {
      sample[name] = await timeCli(checkout, args);
    }
    const stopping = performance.now();
    await stopServer(gateway.child);
    sample.stopMs = performance.now() - stopping;
    return sample;
  } finally {
    await stopServer(gateway.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

const samples = new Map(checkouts.map((checkout) => [checkout, []]));
for (let round = 0; round < rounds; round++) {
  // Alternate the order, so neither checkout always runs first in a round.
  const order = round % 2 ? [...checkouts].reverse() : checkouts;
  for (const checkout of order) samples.get(checkout).push(await oneRound(checkout));
  process.stderr.write(`round ${round + 1}/${rounds} done\n`);
}

const metrics = ['startMs', 'rssMb', 'stopMs', '--help', 'config check', 'status'];
const label = {
  startMs: 'run → listening (ms)',
  rssMb: `idle RSS after ${idleMs / 1000} s (MB)`,
  stopMs: 'SIGTERM → exit (ms)',
};
const fmt = (value, metric) => (metric === 'rssMb' ? value.toFixed(1) : value.toFixed(0));
console.log(`${rounds} rounds; median (min–max)\n`);
console.log(`| metric | ${checkouts.join(' | ')} |`);
console.log(`| --- |${checkouts.map(() => ' ---: |').join('')}`);
for (const metric of metrics) {
  const cells = checkouts.map((checkout) => {
    const values = samples.get(checkout).map((s) => s[metric]);
    return `${fmt(median(values), metric)} (${fmt(Math.min(...values), metric)}–${fmt(Math.max(...values), metric)})`;
  });
  console.log(`| ${label[metric] ?? `\`agentgate ${metric}\` (ms)`} | ${cells.join(' | ')} |`);
}
if (options.json) writeFileSync(options.json, JSON.stringify(Object.fromEntries(samples), null, 2));
