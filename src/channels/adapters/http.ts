/**
 * Shared plumbing for adapters that POST JSON to a platform's HTTP API: one
 * request with a time limit and the caller's abort, network failures reduced to
 * an error code (their messages may quote a URL holding a credential), and the
 * small parsers every adapter needs (Retry-After, secret redaction, text checks).
 * Each adapter keeps its own mapping from the platform's answer to DeliveryError.
 *
 * Additive by design: several adapters share it, so change nothing here that
 * one of them relies on; add instead.
 */
import { DeliveryError } from '../types.js';

export const DEFAULT_TIMEOUT_MS = 30_000;

export interface PostJsonRequest {
  /** Channel id, used as the prefix of every error message (`slack: ...`). */
  platform: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  timeoutMs?: number;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  /** Content-Type to send; default `application/json`. */
  contentType?: string;
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  /** The body as text (an HTML error page from a proxy stays readable here). */
  raw: string;
  /** The body parsed as a JSON object, or undefined when it is not one. */
  json: Record<string, unknown> | undefined;
}

/**
 * POSTs `body` as JSON and reads the whole answer. Throws only DeliveryError
 * (retryable: timeouts, refused or dropped connections) or, when the caller's
 * own signal fired, that signal's reason as it is.
 */
export async function postJson(request: PostJsonRequest): Promise<HttpAnswer> {
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const fetchImpl = request.fetch ?? fetch;
  try {
    const response = await fetchImpl(request.url, {
      method: 'POST',
      headers: { ...request.headers, 'content-type': request.contentType ?? 'application/json' },
      body: JSON.stringify(request.body),
      signal: request.signal ? AbortSignal.any([request.signal, timeout]) : timeout,
    });
    const raw = await response.text();
    return { status: response.status, headers: response.headers, raw, json: parseObject(raw) };
  } catch (error) {
    // The caller's own abort (shutdown, run timeout) is theirs to interpret.
    if (request.signal?.aborted) throw request.signal.reason;
    if (timeout.aborted) {
      throw new DeliveryError(`${request.platform}: no answer within ${timeoutMs / 1000} s`, false);
    }
    // Only the error code (ECONNREFUSED, ENOTFOUND, ...): messages may quote the URL.
    throw new DeliveryError(`${request.platform}: request failed (${networkCode(error)})`, false);
  }
}

function parseObject(raw: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A network failure's code (from `cause.code` as undici sets it), never its message. */
export function networkCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? code : 'network error';
}

/**
 * A wait in milliseconds from the first usable hint: a number of seconds (JSON
 * `retry_after`, possibly fractional), a numeric string (`Retry-After: 3`), or an
 * HTTP date (`Retry-After` may be one, RFC 9110 §10.2.3). Rounded up, never negative.
 */
export function retryAfterMs(...hints: unknown[]): number | undefined {
  for (const hint of hints) {
    if (typeof hint === 'number' && Number.isFinite(hint) && hint >= 0) return Math.ceil(hint * 1000);
    if (typeof hint !== 'string' || hint.trim() === '') continue;
    const text = hint.trim();
    if (/^\d+(\.\d+)?$/.test(text)) return Math.ceil(Number(text) * 1000);
    const date = Date.parse(text);
    if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  }
  return undefined;
}

/**
 * Removes each secret from text about to be shown: platforms sometimes echo a
 * malformed token back in their error. Longest first, so a secret that contains
 * another is removed whole.
 */
export function redactor(...secrets: string[]): (text: string) => string {
  const known = secrets.filter((secret) => secret !== '').sort((a, b) => b.length - a.length);
  return (text) => known.reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}

/** A platform's own error text, redacted and cut short enough for a log line. */
export function platformText(text: unknown, scrub: (text: string) => string, max = 300): string | undefined {
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  return scrub(text).replace(/\s+/g, ' ').trim().slice(0, max);
}

/**
 * Refuses, before any request, text the platform would refuse anyway: empty
 * (after trimming) or longer than the adapter's `maxMessageLength` (the delivery
 * engine splits replies; an adapter sends one message). Lengths are UTF-16 units,
 * which never undercount a platform's characters.
 */
export function checkText(platform: string, text: string, maxLength: number): void {
  if (text.trim() === '') throw new DeliveryError(`${platform}: message text is empty`, true);
  if (text.length > maxLength) {
    throw new DeliveryError(
      `${platform}: message text is ${text.length} characters; the limit is ${maxLength}`,
      true,
    );
  }
}

/** Joins a configured base URL and a path without doubling or dropping the slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
