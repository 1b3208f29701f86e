/**
 * Runs an `agentgate` command in this process — the program of
 * src/cli/program.ts, as the bin runs it — and answers as `runCli` (cli.ts)
 * does for a child process, without a Node start per command.
 *
 * `runCliInProcess` is for the commands that end: the short-lived ones, and
 * `run` or `hooks gmail run` refusing to start. `startCliInProcess` starts
 * `run` as `startCli` does, its stop kept by the test instead of signal
 * handlers (io.ts, `serve`). What depends on being a process of its own — a
 * signal, the exit of the real bin, a kill, the one-writer lock, the umask — is
 * spawned (cli.ts); so is one case of most commands, so the bin stays covered.
 */
import { Writable } from 'node:stream';
import { createIo, type StopServer } from '../../src/cli/io.js';
import { runCli as runProgram } from '../../src/cli/program.js';
import type { CliResult } from './cli.js';

export async function runCliInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const run = await runInProcess(args, env);
  if (run.stop) {
    await run.stop('test');
    throw new Error(`agentgate ${args.join(' ')} started serving; use startCliInProcess`);
  }
  return run.result;
}

export interface InProcessCli {
  url: string;
  /** What it has written so far, stdout then stderr. */
  output(): string;
  /** Stops it as SIGTERM would; resolves to the exit code the bin would end with. */
  stop(): Promise<number>;
}

const LISTENING = /agentgate listening on (http:\/\/\S+)/;

/** `agentgate run` with these arguments, once it listens; rejects if it refused to start. */
export async function startCliInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<InProcessCli> {
  // As startCli: warnings and errors only, unless the test asks for more.
  const run = await runInProcess(['run', ...args], { AGENTGATE_LOG_LEVEL: 'warn', ...env });
  const { stdout, stderr } = run.result;
  const url = LISTENING.exec(stdout)?.[1];
  if (!run.stop || !url) {
    await run.stop?.('test');
    throw new Error(`agentgate run exited (${run.result.code}) before listening:\n${stdout}${stderr}`);
  }
  const stop = run.stop;
  let stopped: Promise<number> | undefined;
  return {
    url,
    output: () => run.output(),
    stop: () => {
      stopped ??= stop('SIGTERM');
      return stopped;
    },
  };
}

async function runInProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ result: CliResult; stop?: StopServer; output: () => string }> {
  const stdout = capture();
  const stderr = capture();
  let stop: StopServer | undefined;
  // The environment a child gets from `runCli`: this process's, with the test's on top. It is
  // handed to the command, never set in process.env, so one test's cannot leak into the next.
  const io = createIo(stdout.stream, stderr.stream, { ...process.env, ...env }, (given) => {
    stop = given;
  });
  const code = await runProgram(args, io);
  return {
    result: { code, signal: null, stdout: stdout.text(), stderr: stderr.text() },
    stop,
    output: () => stdout.text() + stderr.text(),
  };
}

/** A stream that keeps what is written to it; not a terminal, like a child's pipe. */
function capture(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    decodeStrings: false,
    write(chunk: string, _encoding, done) {
      text += chunk;
      done();
    },
  });
  return { stream, text: () => text };
}
