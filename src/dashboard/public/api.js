// @ts-check
/**
 * The admin API as the dashboard calls it. The token lives in sessionStorage
 * (this tab only, gone when it closes) and leaves the page only in the
 * Authorization header: never in a URL, never logged.
 */

const TOKEN_KEY = 'agentgate.adminToken';

/** @returns {string | null} */
export function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

/** @param {string} token */
export function keepToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * Why a token cannot be used, before sending it: a header value holds only
 * visible ASCII (fetch throws on anything else).
 * @param {string} token
 * @returns {string | null}
 */
export function tokenProblem(token) {
  if (token === '') return 'Enter the admin token (gateway.auth.token).';
  if (!/^[\x21-\x7e]+$/.test(token)) return 'The token holds characters an HTTP header cannot carry.';
  return null;
}

/** An API call that did not succeed, with the sentence to show. */
export class ApiError extends Error {
  /**
   * @param {number} status HTTP status, 0 when the gateway did not answer
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/**
 * Calls the admin API. Paths are relative to /ui/ ('../api/…'), so a gateway
 * behind a proxy under a path prefix works too.
 * @param {'GET' | 'POST'} method
 * @param {string} path e.g. 'api/runs' (segments already encoded)
 * @param {Record<string, string | number | undefined>} [query]
 * @param {unknown} [body] sent as JSON when given (`POST /api/runs/retry`)
 * @returns {Promise<any>} the answer's JSON, or its text when it is not JSON (/metrics)
 */
export async function call(method, path, query = {}, body = undefined) {
  const token = storedToken();
  if (!token) throw new ApiError(401, 'unauthorized', 'Enter the admin token (gateway.auth.token).');
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const search = params.size > 0 ? `?${params}` : '';
  /** @type {Response} */
  let response;
  try {
    /** @type {Record<string, string>} */
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    response = await fetch(`../${path}${search}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ApiError(0, 'network', `The gateway did not answer (${reason}).`);
  }
  const text = await response.text();
  /** @type {any} */
  let answer;
  try {
    answer = text ? JSON.parse(text) : undefined;
  } catch {
    answer = undefined;
  }
  if (!response.ok) throw errorOf(response, answer);
  return answer ?? text;
}

/**
 * A file from the admin API (a run's attachment) as a Blob, fetched with the token in
 * the Authorization header like every call: the page shows it through a blob: URL, so
 * the token is never put in an <img> or link URL.
 * @param {string} path e.g. 'api/runs/<id>/attachments/0' (segments already encoded)
 * @returns {Promise<Blob>}
 */
export async function fetchBlob(path) {
  const token = storedToken();
  if (!token) throw new ApiError(401, 'unauthorized', 'Enter the admin token (gateway.auth.token).');
  /** @type {Response} */
  let response;
  try {
    response = await fetch(`../${path}`, {
      headers: { authorization: `Bearer ${token}` },
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ApiError(0, 'network', `The gateway did not answer (${reason}).`);
  }
  if (!response.ok) {
    const text = await response.text();
    /** @type {any} */
    let answer;
    try {
      answer = text ? JSON.parse(text) : undefined;
    } catch {
      answer = undefined;
    }
    throw errorOf(response, answer);
  }
  return response.blob();
}

/**
 * The work standing in the store now, from the gauges of `GET /metrics` (read
 * from the store, so the same on every replica).
 * @returns {Promise<{ queued: number, running: number, deliveriesPending: number }>}
 */
export async function workStanding() {
  const exposition = String(await call('GET', 'metrics'));
  /** @param {string} name */
  const gauge = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(exposition)?.[1] ?? Number.NaN);
  return {
    queued: gauge('agentgate_runs_queued'),
    running: gauge('agentgate_runs_running'),
    deliveriesPending: gauge('agentgate_deliveries_pending'),
  };
}

/**
 * The gateway's error sentence. Its answers are {"ok":false,"error":"<sentence>","code":"<code>"};
 * a {"error":"<code>","message":"<sentence>"} shape is read too, and anything else
 * (a proxy's HTML page) becomes the HTTP status line.
 * @param {Response} response
 * @param {any} body
 */
function errorOf(response, body) {
  if (body && typeof body.message === 'string') {
    return new ApiError(response.status, String(body.error ?? body.code ?? 'error'), body.message);
  }
  if (body && typeof body.error === 'string') {
    return new ApiError(response.status, String(body.code ?? 'error'), body.error);
  }
  const line = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  return new ApiError(response.status, 'http', `The gateway answered ${line}.`);
}

/** @param {string} segment */
export const seg = (segment) => encodeURIComponent(segment);
