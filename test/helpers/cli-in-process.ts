/**
 * Runs an `agentgate` command in this process — the program of
 * src/cli/program.ts, as the bin runs it — and answers as `runCli` (cli.ts)
 * does for a child process, without a Node start per command.
 *
 * For the short-lived commands only: `run` and `hooks gmail run` own their
 * process (signal handlers, `process.exit`) and are started with `startCli`
 * or spawned. A few tests still spawn the others, so the bin stays covered.
 */
import { Writable } from 'node:stream';
import { createIo } from '../../src/cli/io.js';
import { runCli as runProgram } from '../../src/cli/program.js';
import type { CliResult } from './cli.js';

export async function runCliInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const stdout = capture();
  const stderr = capture();
  // The environment a child gets from `runCli`: this process's, with the test's on top. It is
  // handed to the command, never set in process.env, so one test's cannot leak into the next.
  const io = createIo(stdout.stream, stderr.stream, { ...process.env, ...env });
  const code = await runProgram(args, io);
  return { code, signal: null, stdout: stdout.text(), stderr: stderr.text() };
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
