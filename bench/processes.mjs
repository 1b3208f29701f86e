// Starting and stopping the servers under test, optionally pinned to one core.
import { spawn } from 'node:child_process';

/**
 * Spawns `command args` (under `taskset -c cpu` when cpu is given) and resolves
 * once its output matches `pattern`, with the first capture group as `url`.
 */
export function startServer(command, args, { env = {}, pattern, cpu }) {
  const [file, argv] =
    cpu === undefined ? [command, args] : ['taskset', ['-c', String(cpu), command, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const onData = (chunk) => {
      output += chunk;
      const match = pattern.exec(output);
      if (match) resolve({ child, url: match[1] });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`${argv.join(' ')} exited ${code}:\n${output}`)));
  });
}

/** SIGTERM, then waits for the exit (the gateway commits what it accepted before it exits). */
export function stopServer(child) {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.on('exit', resolve);
    child.kill('SIGTERM');
  });
}
