/**
 * A stdio server's stderr, to the gateway log at debug (docs/tools.md, "Servers"): one
 * entry per line, each line cut at `lineChars`, at most `linesPerMinute` lines a minute
 * (the rest are counted and the count logged once the minute is over), and every value
 * of the server's `env` (of 4 characters or more) replaced by `[redacted]` first: a server
 * may print its own token.
 */
import type { Logger } from '../../log.js';
import { STDERR_LIMITS } from './limits.js';

const MINUTE_MS = 60_000;

export function stderrToLog(
  server: string,
  log: Logger,
  secrets: readonly string[],
  limits: { lineChars: number; linesPerMinute: number } = STDERR_LIMITS,
  now: () => number = Date.now,
): (chunk: Buffer) => void {
  const scrub = redactor(secrets);
  let partial = '';
  let windowStart = now();
  let inWindow = 0;
  let dropped = 0;
  const emit = (line: string) => {
    if (now() - windowStart >= MINUTE_MS) {
      if (dropped > 0) log.debug({ server, dropped }, 'mcp server stderr: lines dropped (over the limit)');
      windowStart = now();
      inWindow = 0;
      dropped = 0;
    }
    if (inWindow >= limits.linesPerMinute) {
      dropped++;
      return;
    }
    inWindow++;
    const clean = scrub(line);
    const text = clean.length > limits.lineChars ? `${clean.slice(0, limits.lineChars)}…` : clean;
    log.debug({ server, stderr: text }, 'mcp server stderr');
  };
  return (chunk) => {
    const lines = (partial + chunk.toString('utf8')).split(/\r?\n/);
    partial = lines.pop() ?? '';
    // A line that never ends is cut, not buffered without bound.
    if (partial.length > limits.lineChars * 2) {
      emit(partial);
      partial = '';
    }
    for (const line of lines) if (line.trim() !== '') emit(line);
  };
}

/**
 * Values shorter than this are not searched for: `"1"` or `"on"` would blank out every line,
 * and nothing that short is a credential.
 */
const MIN_SECRET_CHARS = 4;

/** Replaces each secret (longest first, so one inside another is not half left) by `[redacted]`. */
export function redactor(secrets: readonly string[]): (text: string) => string {
  const known = [...new Set(secrets.filter((secret) => secret.length >= MIN_SECRET_CHARS))].sort(
    (a, b) => b.length - a.length,
  );
  return (text) => known.reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}
