/**
 * What a command reads and writes besides its arguments: stdout, stderr and
 * the environment. The bin (main.ts) passes the real process; a test passes
 * streams it reads back and an environment of its own, so a command runs in
 * the test's process without touching process.env or process.exitCode.
 */
import { Console } from 'node:console';

/** process.stdout or process.stderr, or a stream that stands in for one. */
export type CliStream = NodeJS.WritableStream & {
  /** A terminal: doctor's colors and the progress line (progress.ts) appear only then. */
  readonly isTTY?: boolean;
  /** A terminal's width, which commander wraps its help to. */
  readonly columns?: number;
};

export interface CliIo {
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  /** `console.log` and `console.error` on these two streams. */
  readonly console: Console;
  /**
   * The environment the command reads: where the config is ($AGENTGATE_CONFIG,
   * $AGENTGATE_HOME, $HOME; docs/cli.md), `${VAR}` in the config, NO_COLOR, PATH.
   */
  readonly env: NodeJS.ProcessEnv;
}

/** The real process, for the bin: its own console, so the output is the one `console.log` gave. */
export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, console, env: process.env };
}

/** Other streams and another environment, e.g. a test's. */
export function createIo(stdout: CliStream, stderr: CliStream, env: NodeJS.ProcessEnv): CliIo {
  return { stdout, stderr, console: new Console({ stdout, stderr }), env };
}
