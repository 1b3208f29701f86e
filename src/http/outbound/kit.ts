/** Building blocks for callers that read answers themselves: status classes, waits, redaction, quoting. */

import type { FailureKind } from './types.js';

/** Longest slice of an answer's body quoted in an error message. */
const MAX_QUOTED_BODY = 200;

/**
 * The default reading of a status: 2xx `ok`; 408 (timeout), 425 (too early),
 * 429 (rate limit) and 5xx `temporary`; any other status `permanent` (the
 * request itself was refused, and sending it again changes nothing).
 */
export function classifyStatus(status: number): 'ok' | FailureKind {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 408 || status === 425 || status === 429 || status >= 500) return 'temporary';
  return 'permanent';
}

/**
 * A wait in milliseconds from the first usable hint, in the order given: a
 * number of seconds (a JSON `retry_after`, possibly fractional), a numeric
 * string (`Retry-After: 3`), or an HTTP date (RFC 9110 §10.2.3) counted from
 * `now`. Rounded up, never negative; undefined when no hint is usable.
 */
export function retryAfterMs(hints: readonly unknown[], now: number = Date.now()): number | undefined {
  for (const hint of hints) {
    if (typeof hint === 'number' && Number.isFinite(hint) && hint >= 0) return Math.ceil(hint * 1000);
    if (typeof hint !== 'string' || hint.trim() === '') continue;
    const text = hint.trim();
    if (/^\d+(\.\d+)?$/.test(text)) return Math.ceil(Number(text) * 1000);
    // Only a real date: Date.parse also accepts bare numbers and odd fragments.
    if (!/[a-z]/i.test(text)) continue;
    const date = Date.parse(text);
    if (Number.isFinite(date)) return Math.max(0, date - now);
  }
  return undefined;
}

/**
 * Removes each secret from text about to be shown: services sometimes echo a
 * malformed token back in their errors. Longest first, so a secret that holds
 * another is removed whole; empty and missing secrets are ignored.
 */
export function redactor(...secrets: readonly (string | undefined)[]): (text: string) => string {
  const known = [...new Set(secrets.filter((secret): secret is string => !!secret))].sort(
    (a, b) => b.length - a.length,
  );
  return (text) => known.reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}

/** A network failure's code (from `cause.code` as undici sets it), never its message. */
export function networkCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? code : 'network error';
}

/** A body slice short enough for a log line, whitespace folded. */
export function quote(text: string, max = MAX_QUOTED_BODY): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** Only the host: a URL may carry credentials or tokens in its path or query. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the service';
  }
}

/** Joins a configured base URL and a path without doubling or dropping the slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
