/**
 * The time limits and restart pacing of MCP servers (docs/tools.md, "Servers"). Each is a
 * default that tests may replace (`ServerLimits`), so none of them waits a minute.
 */

/** A `tools/call` that has not answered after this long is given to the model as an error. */
export const TOOL_CALL_TIMEOUT_MS = 60_000;

/** Starting a server (spawn or connect, the `initialize` handshake and its first `tools/list`). */
export const SERVER_START_TIMEOUT_MS = 30_000;

/** After a server dies or fails to start, the next start waits this long, doubling up to the maximum. */
export const RESTART_BACKOFF_MS = { initial: 500, max: 30_000 } as const;

/**
 * A stdio server's `PATH` when its `env` sets none: its program and whatever it starts are
 * looked up there, never on the gateway's own `PATH`.
 */
export const MINIMAL_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The server's stderr reaches the gateway log (debug) one line at a time, within these bounds. */
export const STDERR_LIMITS = { lineChars: 500, linesPerMinute: 60 } as const;

export interface ServerLimits {
  callTimeoutMs: number;
  startTimeoutMs: number;
  backoff: { initial: number; max: number };
}

export const DEFAULT_LIMITS: ServerLimits = {
  callTimeoutMs: TOOL_CALL_TIMEOUT_MS,
  startTimeoutMs: SERVER_START_TIMEOUT_MS,
  backoff: RESTART_BACKOFF_MS,
};

/** The wait before start number `failures + 1`, after `failures` failures in a row. */
export function backoffDelay(failures: number, backoff: ServerLimits['backoff']): number {
  if (failures <= 0) return 0;
  return Math.min(backoff.max, backoff.initial * 2 ** (failures - 1));
}

/** A tool result's text beyond this many characters is cut (with a note saying so) before the model sees it. */
export const MAX_RESULT_CHARS = 100_000;
