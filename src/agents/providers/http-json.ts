/**
 * The one HTTP exchange the HTTP providers share: POST a JSON body, get JSON back,
 * and turn every way that can fail into a ProviderError fit for `run.error` — except
 * an abort, which is rethrown as the caller's own reason (see abort.ts).
 */
import { abortReason } from './abort.js';
import { ProviderError } from './types.js';

export interface PostJsonOptions {
  /** Prefix of every error message, e.g. `openai-chat provider "openai"`. */
  label: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  /** Pulls the human message out of the API's error body, if it has the API's shape. */
  errorMessage: (json: unknown) => string | undefined;
  /** Secrets that must never reach an error message (the API key). */
  secrets: (string | undefined)[];
}

/** Longest slice of a non-JSON error body quoted in a message: enough to recognise, not a page of HTML. */
const MAX_QUOTED_BODY = 200;

export async function postJson(options: PostJsonOptions): Promise<unknown> {
  const { label, url, signal } = options;
  const fail = (message: string, status?: number, retryAfterMs?: number): ProviderError =>
    new ProviderError(redact(`${label}: ${message}`, options.secrets), status, { retryAfterMs });
  // Not reaching the provider, or losing the connection, may pass: the turn retries it.
  const unreachable = (message: string): ProviderError =>
    new ProviderError(redact(`${label}: ${message}`, options.secrets), undefined, { transient: true });

  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { ...options.headers, 'content-type': 'application/json' },
      body: JSON.stringify(options.body),
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw abortReason(signal);
    throw unreachable(`could not reach ${hostOf(url)}${causeSuffix(error)}`);
  }

  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    if (signal.aborted) throw abortReason(signal);
    throw unreachable(`connection to ${hostOf(url)} failed while reading the reply${causeSuffix(error)}`);
  }

  let json: unknown;
  let parsed = true;
  try {
    json = JSON.parse(text);
  } catch {
    parsed = false;
  }

  if (!response.ok) {
    const detail =
      (parsed ? options.errorMessage(json) : undefined) ??
      (quote(text) || response.statusText || 'request failed');
    throw fail(
      `${response.status} ${detail}`,
      response.status,
      retryAfterMs(response.headers.get('retry-after')),
    );
  }
  if (!parsed) {
    throw fail(`returned a reply that is not JSON: ${quote(text) || '(empty body)'}`, response.status);
  }
  return json;
}

/** `Retry-After` as seconds or an HTTP date, in ms; undefined when absent or unreadable. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Only the host: a base URL may carry credentials or tokens in its path or query. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the provider';
  }
}

/** fetch's "fetch failed" says nothing; the cause's code (ECONNREFUSED, ENOTFOUND, ...) does. */
function causeSuffix(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  return typeof cause?.code === 'string' ? ` (${cause.code})` : '';
}

function quote(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_QUOTED_BODY ? `${flat.slice(0, MAX_QUOTED_BODY)}…` : flat;
}

function redact(message: string, secrets: (string | undefined)[]): string {
  let out = message;
  for (const secret of secrets) {
    if (secret) out = out.split(secret).join('[redacted]');
  }
  return out;
}

/** `https://host/v1/` → `https://host/v1`, so paths can be appended with one "/". */
export function trimSlash(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

/** The `error.message` both OpenAI (`{error:{message}}`) and Anthropic (`{type:"error", error:{message}}`) use. */
export function nestedErrorMessage(json: unknown): string | undefined {
  const error = (json as { error?: unknown } | null)?.error;
  if (typeof error === 'string' && error) return error;
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' && message ? message : undefined;
}
