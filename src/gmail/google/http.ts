/**
 * Google's JSON APIs over the shared outbound client (src/http/outbound.ts, which
 * owns the time limit and turns failures before an answer into secret-free
 * errors). What is Google's stays here: its error shape (`{error:{code,message,
 * status}}`) turned into a GoogleApiError, one retry with a fresh access token
 * after a 401, and messages that never carry a token or secret (query strings are
 * left out, and anything token-shaped that Google echoes back — e.g. a push
 * endpoint's `?token=` — is redacted).
 */
import { createOutboundClient, DEFAULT_TIMEOUT_MS } from '../../http/outbound.js';
import type { GoogleAuth } from './oauth.js';
import { redact } from './redact.js';

/** Google answers within seconds; a hung connection must not stall the receiver forever. */
export { DEFAULT_TIMEOUT_MS };

export interface HttpOptions {
  /** Replaces global fetch (tests). */
  fetch?: typeof fetch;
  timeoutMs?: number;
}

/** A non-2xx answer from a Google API. `reason` is Google's `error.status`, e.g. ALREADY_EXISTS. */
export class GoogleApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'GoogleApiError';
  }
}

/** The URL without its query string: what an error message may show. */
function describe(method: string, url: string): string {
  try {
    const parsed = new URL(url);
    return `${method} ${parsed.origin}${parsed.pathname}`;
  } catch {
    return method;
  }
}

interface GoogleErrorBody {
  error?: { code?: number; message?: string; status?: string } | string;
  error_description?: string;
}

function apiError(what: string, status: number, statusText: string, body: unknown): GoogleApiError {
  const error = (body as GoogleErrorBody | undefined)?.error;
  const message = typeof error === 'object' && error ? error.message : undefined;
  const reason =
    typeof error === 'object' && error ? error.status : typeof error === 'string' ? error : undefined;
  const detail = message || statusText || 'error';
  return new GoogleApiError(status, reason, redact(`${what}: HTTP ${status} ${detail}`));
}

/**
 * An authorized JSON call. A 401 means the cached access token was revoked or expired
 * early: it is dropped and the call made once more with a fresh one.
 */
export async function googleJson<T>(
  auth: GoogleAuth,
  http: HttpOptions,
  method: string,
  url: string,
  body?: unknown,
): Promise<T> {
  const what = `Google API ${describe(method, url)}`;
  // Failures before an answer are labelled with the URL minus its query; redact() scrubs token shapes.
  const client = createOutboundClient({ label: what, redact, timeoutMs: http.timeoutMs, fetch: http.fetch });
  for (let attempt = 0; ; attempt++) {
    const token = await auth.accessToken();
    const answer = await client.send({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      ...(body === undefined ? {} : { json: body }),
    });
    if (answer.status === 401 && attempt === 0) {
      auth.invalidate();
      continue;
    }
    // Several Google methods answer 2xx with an empty body: that is `{}`.
    const parsed = answer.raw.trim() === '' ? {} : answer.json;
    if (answer.status < 200 || answer.status > 299) {
      throw apiError(what, answer.status, answer.statusText, parsed);
    }
    if (parsed === undefined) {
      throw new GoogleApiError(answer.status, undefined, `${what}: answer is not a JSON object`);
    }
    return parsed as T;
  }
}

/** Encodes each segment of a resource name (`projects/p/topics/t`), keeping the slashes. */
export function resourcePath(name: string): string {
  return name.split('/').map(encodeURIComponent).join('/');
}

/** Base URL without trailing slashes, so `${base}/v1/...` never doubles one. */
export function trimBase(base: string): string {
  return base.replace(/\/+$/, '');
}
