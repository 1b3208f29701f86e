// wrk as the load generator: a C program on one thread needs a fraction of the
// CPU a Node load generator takes, so on a 2-core machine the server under test
// keeps (nearly) a core of its own. Installed from Debian's packages when missing.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

const SCRIPT = join(new URL('.', import.meta.url).pathname, 'wrk-post.lua');

const hasWrk = () => !spawnSync('wrk', ['-v'], { stdio: 'ignore' }).error;

function apt(args) {
  const r = spawnSync('apt-get', args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return r.error ? r.error.message : r.status === 0 ? null : `exit ${r.status}: ${String(r.stderr).trim()}`;
}

/**
 * Makes sure wrk is on the PATH, installing Debian's package (as root) when it is
 * not. Returns null when wrk is ready, else why it is not.
 */
export function ensureWrk(log) {
  if (hasWrk()) return null;
  if (process.getuid?.() !== 0)
    return 'wrk is not installed and this process is not root, so apt-get cannot install it';
  log('wrk not found: installing it with apt-get (Debian package "wrk") ...');
  // A fresh machine may have no package lists yet; update only when install alone fails.
  let failure = apt(['install', '-y', '-qq', 'wrk']);
  if (failure) failure = apt(['update', '-qq']) ?? apt(['install', '-y', '-qq', 'wrk']);
  if (failure) return `apt-get install wrk failed (${failure.slice(0, 300)})`;
  return hasWrk() ? null : 'apt-get reported success but wrk is still not on the PATH';
}

export function wrkVersion() {
  const r = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  return /wrk\s+(\S+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? 'unknown';
}

/**
 * One wrk run against `url` + `path`. `cpu`, when given, pins wrk to that core.
 * Resolves to requests/s, latency in ms, and counts of answers by class.
 */
export function runWrk({ url, path, seconds, connections, threads, cpu, token, tag, parts }) {
  const args = [
    '-t',
    String(threads),
    '-c',
    String(connections),
    '-d',
    `${seconds}s`,
    '--timeout',
    '10s',
    '-s',
    SCRIPT,
    `${url}${path}`,
    '--',
    token,
    tag,
    ...parts,
  ];
  const [command, argv] =
    cpu === undefined ? ['wrk', args] : ['taskset', ['-c', String(cpu), 'wrk', ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = /^WRK_RESULT (.*)$/m.exec(output)?.[1];
      if (code !== 0 || !line) return reject(new Error(`wrk exited ${code}:\n${output}`));
      const r = JSON.parse(line);
      const other = r.errors.status + r.errors.timeout + r.errors.connect + r.errors.read + r.errors.write;
      resolve({
        rps: r.requests / (r.durationUs / 1e6),
        p50: r.latencyUs.p50 / 1000,
        p99: r.latencyUs.p99 / 1000,
        // wrk counts every answer outside 2xx/3xx as a status error; the gateway sends no 3xx.
        ok: r.requests - r.errors.status,
        other,
        sent: r.sent,
      });
    });
  });
}
