/**
 * The fake's one HTTP server: it records each request in `calls`, applies failures queued
 * by `failNext`, serves the routes that need no access token (OAuth's token endpoint and
 * consent page, the OIDC keys), checks the bearer token on every other route, and hands
 * the request to the service its path names. Google's hosts differ (oauth2, gmail, pubsub,
 * serviceusage.googleapis.com) but their paths do not collide, so one loopback origin
 * stands in for all of them.
 *
 * `failNext(match, status, message?, times?)` makes the next matching request(s) (`match`
 * tested against "METHOD /path") fail with Google's error body; status 0 drops the
 * connection instead. Token-request bodies are recorded reduced to grant_type/client_id,
 * so no secret lands in `calls`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type FakeServer, readBody, startServer } from '../support.js';
import { errorBody, HttpError } from './errors.js';
import { gmail } from './gmail.js';
import { consent, hasValidAccessToken, parseTokenParams, tokenEndpoint } from './oauth.js';
import type { FakeOidc } from './oidc.js';
import { pubsub } from './pubsub.js';
import { operation, services } from './service-usage.js';
import type { FakeGoogleCall, GoogleState } from './state.js';

export function serveGoogle(state: GoogleState, oidc: FakeOidc): Promise<FakeServer> {
  return startServer((req, res) => {
    handle(state, oidc, req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify(errorBody(500, String(error))));
    });
  });
}

async function handle(
  state: GoogleState,
  oidc: FakeOidc,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://fake');
  const method = req.method ?? 'GET';
  const { raw } = await readBody(req);
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    query[key] = all.length === 1 ? (all[0] as string) : all;
  }
  const call: FakeGoogleCall = { method, path: url.pathname, query, body: undefined, status: 0 };
  state.calls.push(call);
  const send = (status: number, payload: unknown) => {
    call.status = status;
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(payload));
  };

  const failure = state.failures.find((f) =>
    typeof f.match === 'string'
      ? `${method} ${url.pathname}`.includes(f.match)
      : f.match.test(`${method} ${url.pathname}`),
  );
  if (failure) {
    if (--failure.times <= 0) state.failures.splice(state.failures.indexOf(failure), 1);
    if (failure.status === 0) {
      req.socket.destroy();
      return;
    }
    send(failure.status, errorBody(failure.status, failure.message ?? 'Injected failure'));
    return;
  }

  if (method === 'POST' && url.pathname === '/token') {
    const params = parseTokenParams(raw, req.headers['content-type']);
    call.body = { grant_type: params.grant_type, client_id: params.client_id };
    const answer = tokenEndpoint(state, params);
    send(answer.status, answer.body);
    return;
  }
  if (method === 'GET' && url.pathname === '/oauth2/v3/certs') {
    send(200, oidc.jwks);
    return;
  }
  if (method === 'GET' && url.pathname === '/o/oauth2/v2/auth') {
    call.status = 302;
    consent(state, url.searchParams, res);
    return;
  }

  let body: unknown;
  try {
    body = raw === '' ? undefined : JSON.parse(raw);
  } catch {
    call.body = raw;
    send(400, errorBody(400, 'Invalid JSON payload received.'));
    return;
  }
  call.body = body;
  if (!hasValidAccessToken(state, req.headers.authorization)) {
    res.setHeader('www-authenticate', 'Bearer realm="https://accounts.google.com/", error="invalid_token"');
    send(
      401,
      errorBody(
        401,
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      ),
    );
    return;
  }
  try {
    const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    send(200, route(state, method, segments, url.searchParams, body));
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    send(error.status, errorBody(error.status, error.message, error.reason));
  }
}

/** Picks the service by path: `/gmail/v1/users/…`, `/v1/operations/…`, `/v1/projects/{p}/{collection}/{id}`. */
function route(
  state: GoogleState,
  method: string,
  segments: string[],
  query: URLSearchParams,
  body: unknown,
): unknown {
  const [root, version, kind] = segments;
  if (root === 'gmail' && version === 'v1' && kind === 'users' && segments[3] !== undefined) {
    return gmail(state, method, segments[3], segments.slice(4), query, body);
  }
  if (root !== 'v1') throw new HttpError(404, 'Not Found');
  if (version === 'operations' && segments.length >= 3 && method === 'GET') {
    return operation(state, segments.slice(1).join('/'));
  }
  // A custom method (`:enable`, `:getIamPolicy`, …) rides on the last segment (Google API design guide: "Custom methods").
  const last = segments[segments.length - 1] ?? '';
  const colon = last.lastIndexOf(':');
  const verb = colon > 0 ? last.slice(colon + 1) : undefined;
  const parts = [...segments.slice(1, -1), colon > 0 ? last.slice(0, colon) : last];
  const [projects, project, collection, id] = parts;
  if (projects !== 'projects' || !project || !id || parts.length !== 4) throw new HttpError(404, 'Not Found');
  const name = parts.join('/');
  if (collection === 'services') return services(state, method, project, id, verb);
  if (collection !== 'topics' && collection !== 'subscriptions') throw new HttpError(404, 'Not Found');
  return pubsub(state, method, project, collection, id, name, verb, body);
}
