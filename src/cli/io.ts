/**
 * What a command reads and writes besides its arguments — stdout, stderr and
 * the environment — and, for a server command, what ends it. The bin (main.ts)
 * passes the real process; a test passes streams it reads back, an environment
 * of its own and a stop it calls itself, so a command runs in the test's
 * process without touching process.env, process.exitCode or signal handlers.
 */
import { Console } from 'node:console';
import type { DestinationStream } from 'pino';

/** process.stdout or process.stderr, or a stream that stands in for one. */
export type CliStream = NodeJS.WritableStream & {
  /** A terminal: doctor's colors and the progress line (progress.ts) appear only then. */
  readonly isTTY?: boolean;
  /** A terminal's width, which commander wraps its help to. */
  readonly columns?: number;
};

/**
 * Stops what a server command started (no new requests, in-flight work
 * finished) and resolves to the exit code the process ends with. `signal`
 * names what asked for it, for the log.
 */
export type StopServer = (signal: string) => Promise<number>;

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
  /**
   * Called by `run` and `hooks gmail run` once they listen, before they say so: the bin's
   * stops the server on SIGTERM or SIGINT and ends the process with the code `stop` gives
   * (docs/cli.md); a test's keeps `stop` and calls it when the test is done.
   */
  readonly serve: (stop: StopServer) => void;
}

/** The real process, for the bin: its own console, so the output is the one `console.log` gave. */
export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, console, env: process.env, serve: stopOnSignal };
}

/** Other streams, another environment and another stop, e.g. a test's. */
export function createIo(
  stdout: CliStream,
  stderr: CliStream,
  env: NodeJS.ProcessEnv,
  serve: CliIo['serve'],
): CliIo {
  return { stdout, stderr, console: new Console({ stdout, stderr }), env, serve };
}

/**
 * Where a server command writes its log lines: on the real stdout, pino's own writer, as
 * always; on another stream (a test's), that stream.
 */
export function logDestination(io: CliIo): DestinationStream | undefined {
  return io.stdout === process.stdout ? undefined : io.stdout;
}

/** The bin's: the first SIGTERM or SIGINT stops the server, then the process exits. */
function stopOnSignal(stop: StopServer): void {
  const onSignal = (signal: NodeJS.Signals) => {
    stop(signal).then((code) => process.exit(code));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}
