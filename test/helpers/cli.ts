/**
 * Drives the real `agentgate` CLI (the compiled `dist/cli/main.js`) as a child
 * process, the way a user or a service manager would.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a CLI command to completion. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 20_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`agentgate ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`),
      );
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export interface RunningCli {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const LISTENING = /agentgate listening on (http:\/\/\S+)/;

/** Starts `agentgate run` and waits for its "listening on" line. */
export function startCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 20_000,
): Promise<RunningCli> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'run', ...args], {
      env: { ...process.env, AGENTGATE_LOG_LEVEL: 'warn', ...env },
    });
    let output = '';
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
      child.on('close', (code, signal) => done({ code, signal }));
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`agentgate run did not start in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = LISTENING.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({
          url: match[1] as string,
          child,
          output: () => output,
          exited,
          kill: (signal = 'SIGTERM') => {
            child.kill(signal);
            return exited;
          },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`agentgate run exited (${code}) before listening:\n${output}`));
    });
  });
}
