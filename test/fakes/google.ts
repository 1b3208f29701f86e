/**
 * ONE loopback fake of the four Google surfaces the gmail preset uses (docs/gmail.md), answering in the
 * shapes Google documents, with in-memory state a test can drive.
 *
 *     const g = await startFakeGoogle({ account: 'me@example.com' });
 *     // config: hooks.gmail.endpoints = g.endpoints   (oauthToken = `${g.url}/token`,
 *     //         gmail = pubsub = serviceUsage = g.url); credentials file = g.credentials
 *     const m = g.addMessage({ labelIds: ['INBOX'], from: 'A <a@x>', subject: 'Hi', snippet: 'hello', textBody: 'hello' });
 *     const push = g.pushEnvelope();   // what Pub/Sub would POST to the receiver now
 *     g.expireHistoryBefore(g.historyId);   // history.list with an older start → 404
 *     await g.close();
 *
 * OAuth (`POST /token`, form or JSON): `grant_type=refresh_token` with the known client
 * (`clientId`/`clientSecret`, else 401 `invalid_client`) and refresh token (else, or after
 * `revokeRefreshToken()`, 400 `invalid_grant`) → `{access_token, expires_in, scope,
 * token_type}`; `grant_type=authorization_code` for a code from the consent endpoint
 * `GET /o/oauth2/v2/auth` (`authUrl`; 302 to `redirect_uri?code=…&state=…`, or
 * `error=access_denied` while `denyConsent` is set), checking redirect_uri and the PKCE
 * S256 verifier → also `refresh_token`. Every other route wants `Authorization: Bearer`
 * with an unexpired access token this fake issued (`accessTokenTtl` s), else 401
 * UNAUTHENTICATED; `revokeAccessTokens()` forgets all issued ones.
 *
 * Gmail (user id = `account` or `me`, else 403): `POST …/users/{u}/watch` (`topicName`
 * required, recorded in `watchCalls`, → `{historyId, expiration}`); `POST …/stop`;
 * `GET …/history` (startHistoryId required; older than `expireHistoryBefore()` → 404;
 * `labelId`, `historyTypes`, `maxResults` (≤500, also capped by `historyPageSize`),
 * `pageToken`/`nextPageToken`; `history` left out when empty, like Google);
 * `GET …/messages/{id}?format=full|metadata|minimal`; `GET …/messages?labelIds=…&maxResults=…`
 * (newest first, all labels must match, SPAM/TRASH only with includeSpamTrash).
 * `addMessage(spec)` stores a message (text → text/plain, html → text/html, both →
 * multipart/alternative, or your own `payload`), bumps `historyId` by one and appends a
 * messageAdded record; it returns the stored resource.
 *
 * Pub/Sub: `PUT/GET/DELETE /v1/projects/{p}/topics/{t}` (409 ALREADY_EXISTS),
 * `POST …:getIamPolicy` / `…:setIamPolicy` (etag checked → 409 ABORTED on mismatch),
 * `PUT/GET/DELETE /v1/projects/{p}/subscriptions/{s}` (topic must exist, 409
 * ALREADY_EXISTS), `POST …:modifyPushConfig` (→ `{}`). Stored push configs gain
 * `attributes: {"x-goog-version": "v1"}` as Google's do. State: `topics`, `iam`,
 * `subscriptions`.
 *
 * Service Usage: `POST /v1/projects/{p}/services/{s}:enable` → an Operation (done at
 * once, or — with `slowEnable` — only when polled at `GET /v1/operations/{id}`); already
 * enabled → `operations/noop.DONE_OPERATION`; `GET /v1/projects/{p}/services/{s}`.
 * State: `enabledServices` (`projects/{p}/services/{s}`).
 *
 * `strict: true` adds Google's preconditions: Pub/Sub calls need pubsub.googleapis.com
 * enabled in the project, push endpoints must be https, and watch needs an existing topic
 * on which gmail-api-push may publish.
 *
 * OIDC (Pub/Sub's authenticated push): `GET /oauth2/v3/certs` (`endpoints.oidcCerts`, no
 * auth) serves a JWKS with one RSA key (kid `fake-google-1`). `idToken(claims, opts)` signs
 * an RS256 JWT with that key: `iss` https://accounts.google.com, `iat` now, `exp` in an
 * hour, `email` `oidcEmail` (verified) unless `claims` says otherwise — a claim set to
 * `undefined` is left out; `opts.foreignKey` signs with a key the JWKS does not hold,
 * `opts.kid` names another key id, `opts.alg` writes another alg into the header.
 *
 * Recording: `calls` (every request: method, path, query, body, status; token-request
 * bodies reduced to grant_type/client_id), `tokenRequests`, `watchCalls`, `authRequests`.
 * `failNext(match, status, message?, times?)` makes the next matching request(s) (`match`
 * tested against "METHOD /path") fail with Google's error shape; status 0 drops the
 * connection instead.
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GmailMessage, GmailMessagePart } from '../../src/gmail/google/types.js';

export interface FakeGoogleOptions {
  clientId?: string;
  clientSecret?: string;
  refreshToken?: string;
  /** The mailbox address (Gmail user id). Default me@example.com. */
  account?: string;
  /** The mailbox's history id before any message is added. Default 1000. */
  startHistoryId?: number;
  /** expires_in of issued access tokens, seconds. Default 3599. */
  accessTokenTtl?: number;
  /** Caps history.list pages (to exercise pagination). */
  historyPageSize?: number;
  strict?: boolean;
  slowEnable?: boolean;
}

export interface FakeGoogleCall {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  body: unknown;
  status: number;
}

export interface FakeMessageSpec {
  /** Default: 16 random hex digits, like Gmail's. */
  id?: string;
  threadId?: string;
  /** Default ['INBOX', 'UNREAD']. */
  labelIds?: string[];
  from?: string;
  to?: string;
  subject?: string;
  /** As Gmail sends it: HTML-escaped. Default: escaped start of the text body. */
  snippet?: string;
  textBody?: string;
  htmlBody?: string;
  /** The raw Date header. Default: now, RFC 2822 style. */
  date?: string;
  /** Your own MIME tree; From/To/Subject/Date are added to its headers unless present. */
  payload?: GmailMessagePart;
}

export interface FakeHistoryRecord {
  id: string;
  messages: Array<{ id: string; threadId: string }>;
  messagesAdded: Array<{ message: { id: string; threadId: string; labelIds: string[] } }>;
}

export interface FakePolicy {
  version: number;
  etag: string;
  bindings?: Array<{ role: string; members: string[]; condition?: unknown }>;
}

export interface FakeSubscription {
  name: string;
  topic: string;
  pushConfig: { pushEndpoint?: string; attributes?: Record<string, string>; [key: string]: unknown };
  ackDeadlineSeconds: number;
  [key: string]: unknown;
}

export interface FakeGoogle {
  url: string;
  endpoints: { oauthToken: string; gmail: string; pubsub: string; serviceUsage: string; oidcCerts: string };
  /** The consent page, for `authorizationUrl({authUrl})`. */
  authUrl: string;
  account: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  /** What `credentialsFile` holds for this fake. */
  credentials: { client_id: string; client_secret: string; refresh_token: string };
  /** The mailbox's current history id. */
  readonly historyId: number;
  historyPageSize: number | undefined;
  denyConsent: boolean;
  messages: Map<string, GmailMessage>;
  history: FakeHistoryRecord[];
  topics: Map<string, { name: string }>;
  iam: Map<string, FakePolicy>;
  subscriptions: Map<string, FakeSubscription>;
  enabledServices: Set<string>;
  calls: FakeGoogleCall[];
  tokenRequests: Array<{ grant_type: string; client_id: string; status: number; error?: string }>;
  watchCalls: Array<{ userId: string; topicName: string; labelIds?: string[]; labelFilterBehavior?: string }>;
  authRequests: Array<Record<string, string>>;
  addMessage(spec: FakeMessageSpec): GmailMessage;
  expireHistoryBefore(historyId: number | string): void;
  revokeAccessTokens(): void;
  revokeRefreshToken(): void;
  /** Pub/Sub's push body announcing the current (or given) history id. */
  pushEnvelope(opts?: { historyId?: number | string; emailAddress?: string; messageId?: string }): {
    message: {
      data: string;
      messageId: string;
      message_id: string;
      publishTime: string;
      publish_time: string;
    };
    subscription: string;
  };
  failNext(match: string | RegExp, status: number, message?: string, times?: number): void;
  /** The service account the fake's ID tokens name by default. */
  oidcEmail: string;
  idToken(
    claims: Record<string, unknown>,
    opts?: { foreignKey?: boolean; kid?: string; alg?: string },
  ): string;
  close(): Promise<void>;
}

const OIDC_KID = 'fake-google-1';
const OIDC_EMAIL = 'push@fake-project.iam.gserviceaccount.com';

const GMAIL_PUSH = 'serviceAccount:gmail-api-push@system.gserviceaccount.com';
const RESOURCE_ID = /^(?!goog)[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$/;
const MEMBER =
  /^(user|serviceAccount|group|domain|principal|principalSet):.+|^allUsers$|^allAuthenticatedUsers$/;
const REASONS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

/** Thrown inside handlers; becomes Google's `{error:{code,message,status}}`. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason = REASONS[status] ?? 'UNKNOWN',
  ) {
    super(message);
  }
}

const b64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const escapeHtml = (text: string) =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

function textPart(mimeType: string, text: string, partId: string): GmailMessagePart {
  return {
    partId,
    mimeType,
    filename: '',
    headers: [
      { name: 'Content-Type', value: `${mimeType}; charset="UTF-8"` },
      { name: 'Content-Transfer-Encoding', value: 'quoted-printable' },
    ],
    body: { size: Buffer.byteLength(text), data: b64url(text) },
  };
}

function buildPayload(spec: FakeMessageSpec, top: Array<{ name: string; value: string }>): GmailMessagePart {
  let payload: GmailMessagePart;
  if (spec.payload) payload = structuredClone(spec.payload);
  else if (spec.textBody !== undefined && spec.htmlBody !== undefined) {
    payload = {
      partId: '',
      mimeType: 'multipart/alternative',
      filename: '',
      headers: [{ name: 'Content-Type', value: 'multipart/alternative; boundary="000000000000fake"' }],
      body: { size: 0 },
      parts: [textPart('text/plain', spec.textBody, '0'), textPart('text/html', spec.htmlBody, '1')],
    };
  } else if (spec.htmlBody !== undefined) payload = textPart('text/html', spec.htmlBody, '');
  else payload = textPart('text/plain', spec.textBody ?? '', '');
  const own = payload.headers ?? [];
  const missing = top.filter((h) => !own.some((o) => o.name.toLowerCase() === h.name.toLowerCase()));
  payload.headers = [...missing, ...own];
  return payload;
}

export async function startFakeGoogle(options: FakeGoogleOptions = {}): Promise<FakeGoogle> {
  const clientId = options.clientId ?? '123456789012-fake.apps.googleusercontent.com';
  const clientSecret = options.clientSecret ?? 'GOCSPX-fake-client-secret';
  let refreshToken = options.refreshToken ?? '1//0fake-refresh-token';
  const account = options.account ?? 'me@example.com';
  const ttl = options.accessTokenTtl ?? 3599;
  const strict = options.strict ?? false;

  let historyId = options.startHistoryId ?? 1000;
  let expiredBefore = 0;
  let refreshRevoked = false;
  let counter = 0;
  const accessTokens = new Map<string, number>();
  const authCodes = new Map<string, { redirectUri: string; challenge?: string; scope: string }>();
  const operations = new Map<string, { project: string; service: string; done: boolean }>();
  const failures: Array<{ match: string | RegExp; status: number; message?: string; times: number }> = [];

  const messages = new Map<string, GmailMessage>();
  const history: FakeHistoryRecord[] = [];
  const topics = new Map<string, { name: string }>();
  const iam = new Map<string, FakePolicy>();
  const subscriptions = new Map<string, FakeSubscription>();
  const enabledServices = new Set<string>();
  const calls: FakeGoogleCall[] = [];
  const tokenRequests: FakeGoogle['tokenRequests'] = [];
  const watchCalls: FakeGoogle['watchCalls'] = [];
  const authRequests: FakeGoogle['authRequests'] = [];

  // Keys for Pub/Sub's push tokens: the one the JWKS publishes, and a stranger's.
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const foreignKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwks = {
    keys: [{ ...signingKey.publicKey.export({ format: 'jwk' }), kid: OIDC_KID, alg: 'RS256', use: 'sig' }],
  };

  const issueAccessToken = () => {
    const token = `ya29.fake-${++counter}-${randomBytes(6).toString('hex')}`;
    accessTokens.set(token, Date.now() + ttl * 1000);
    return token;
  };

  // ---- OAuth -------------------------------------------------------------------------

  function tokenEndpoint(params: Record<string, string>): { status: number; body: unknown } {
    const grant = params.grant_type ?? '';
    const record = { grant_type: grant, client_id: params.client_id ?? '' };
    const fail = (status: number, error: string, description: string) => {
      tokenRequests.push({ ...record, status, error });
      return { status, body: { error, error_description: description } };
    };
    if (!params.client_id) return fail(400, 'invalid_request', 'Could not determine client ID from request.');
    if (params.client_id !== clientId) return fail(401, 'invalid_client', 'The OAuth client was not found.');
    if (params.client_secret !== clientSecret) return fail(401, 'invalid_client', 'Unauthorized');
    const scope = 'https://www.googleapis.com/auth/gmail.readonly';
    if (grant === 'refresh_token') {
      if (!params.refresh_token)
        return fail(400, 'invalid_request', 'Missing required parameter: refresh_token');
      if (params.refresh_token !== refreshToken || refreshRevoked) {
        return fail(400, 'invalid_grant', 'Token has been expired or revoked.');
      }
      tokenRequests.push({ ...record, status: 200 });
      return {
        status: 200,
        body: { access_token: issueAccessToken(), expires_in: ttl, scope, token_type: 'Bearer' },
      };
    }
    if (grant === 'authorization_code') {
      const code = authCodes.get(params.code ?? '');
      if (!code) return fail(400, 'invalid_grant', 'Malformed auth code.');
      authCodes.delete(params.code ?? '');
      if (params.redirect_uri !== code.redirectUri) return fail(400, 'redirect_uri_mismatch', 'Bad Request');
      if (code.challenge) {
        const computed = createHash('sha256')
          .update(params.code_verifier ?? '')
          .digest('base64url');
        if (computed !== code.challenge) return fail(400, 'invalid_grant', 'Invalid code verifier.');
      }
      refreshRevoked = false;
      tokenRequests.push({ ...record, status: 200 });
      return {
        status: 200,
        body: {
          access_token: issueAccessToken(),
          expires_in: ttl,
          refresh_token: refreshToken,
          scope: code.scope,
          token_type: 'Bearer',
        },
      };
    }
    return fail(400, 'unsupported_grant_type', `Invalid grant_type: ${grant}`);
  }

  /** The consent page: the user always agrees (unless denyConsent) and Google redirects back. */
  function consent(query: URLSearchParams, res: ServerResponse): void {
    const params = Object.fromEntries(query);
    authRequests.push(params);
    const redirect = params.redirect_uri;
    if (params.client_id !== clientId || !redirect) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('Error 400: invalid_request');
      return;
    }
    const back = new URL(redirect);
    if (fake.denyConsent) back.searchParams.set('error', 'access_denied');
    else {
      if (
        params.response_type !== 'code' ||
        (params.code_challenge && params.code_challenge_method !== 'S256')
      ) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('Error 400: invalid_request');
        return;
      }
      const code = `4/0fake-code-${++counter}`;
      authCodes.set(code, {
        redirectUri: redirect,
        challenge: params.code_challenge,
        scope: params.scope ?? '',
      });
      back.searchParams.set('code', code);
      back.searchParams.set('scope', params.scope ?? '');
    }
    if (params.state !== undefined) back.searchParams.set('state', params.state);
    res.writeHead(302, { location: back.toString() }).end();
  }

  // ---- Gmail -------------------------------------------------------------------------

  function gmail(
    method: string,
    user: string,
    rest: string[],
    query: URLSearchParams,
    body: unknown,
  ): unknown {
    if (user !== account && user !== 'me') throw new HttpError(403, `Delegation denied for ${account}`);
    const [resource, id] = rest;
    if (method === 'POST' && resource === 'watch' && rest.length === 1) return watch(user, body);
    if (method === 'POST' && resource === 'stop' && rest.length === 1) return {};
    if (method === 'GET' && resource === 'history' && rest.length === 1) return listHistory(query);
    if (method === 'GET' && resource === 'messages' && rest.length === 1) return listMessages(query);
    if (method === 'GET' && resource === 'messages' && id !== undefined && rest.length === 2) {
      return getMessage(id, query.get('format') ?? 'full');
    }
    throw new HttpError(404, 'Not Found');
  }

  function watch(userId: string, body: unknown): unknown {
    const request = (body ?? {}) as {
      topicName?: unknown;
      labelIds?: unknown;
      labelFilterBehavior?: unknown;
    };
    const topicName = typeof request.topicName === 'string' ? request.topicName : '';
    if (!/^projects\/[^/]+\/topics\/[^/]+$/.test(topicName)) {
      throw new HttpError(400, 'Invalid topicName does not match projects/SOME-ANDROID-PROJECT/topics/*');
    }
    if (strict) {
      if (!topics.has(topicName))
        throw new HttpError(404, `Resource not found (resource=${topicName.split('/')[3]}).`);
      const granted = iam
        .get(topicName)
        ?.bindings?.some((b) => b.role === 'roles/pubsub.publisher' && b.members.includes(GMAIL_PUSH));
      if (!granted) {
        throw new HttpError(
          403,
          `Error sending test message to Cloud PubSub ${topicName} : User not authorized to perform this action.`,
        );
      }
    }
    watchCalls.push({
      userId,
      topicName,
      labelIds: Array.isArray(request.labelIds) ? (request.labelIds as string[]) : undefined,
      labelFilterBehavior:
        typeof request.labelFilterBehavior === 'string' ? request.labelFilterBehavior : undefined,
    });
    return { historyId: String(historyId), expiration: String(Date.now() + 7 * 24 * 3600 * 1000) };
  }

  function pageOf<T>(items: T[], query: URLSearchParams, cap: number): { page: T[]; next?: string } {
    const token = query.get('pageToken');
    const offset = token ? Number(Buffer.from(token, 'base64url').toString()) : 0;
    if (!Number.isInteger(offset) || offset < 0) throw new HttpError(400, 'Invalid pageToken');
    const size = Math.min(Number(query.get('maxResults') ?? 100) || 100, 500, cap);
    const page = items.slice(offset, offset + size);
    const end = offset + size;
    return { page, next: end < items.length ? Buffer.from(String(end)).toString('base64url') : undefined };
  }

  function listHistory(query: URLSearchParams): unknown {
    const start = Number(query.get('startHistoryId'));
    if (!query.get('startHistoryId') || !Number.isInteger(start) || start < 0) {
      throw new HttpError(400, 'Invalid startHistoryId');
    }
    if (start < expiredBefore) throw new HttpError(404, 'Requested entity was not found.');
    const types = query.getAll('historyTypes');
    const label = query.get('labelId');
    const records = history.filter(
      (r) =>
        Number(r.id) > start &&
        (types.length === 0 || types.includes('messageAdded')) &&
        (!label || r.messagesAdded.some((a) => a.message.labelIds.includes(label))),
    );
    const { page, next } = pageOf(records, query, fake.historyPageSize ?? 500);
    return {
      ...(page.length > 0 ? { history: page } : {}),
      ...(next ? { nextPageToken: next } : {}),
      historyId: String(historyId),
    };
  }

  function listMessages(query: URLSearchParams): unknown {
    const labels = query.getAll('labelIds');
    const withJunk = query.get('includeSpamTrash') === 'true';
    const matching = [...messages.values()].reverse().filter((m) => {
      const own = m.labelIds ?? [];
      if (!withJunk && (own.includes('SPAM') || own.includes('TRASH'))) return false;
      return labels.every((l) => own.includes(l));
    });
    const { page, next } = pageOf(matching, query, 500);
    return {
      ...(page.length > 0 ? { messages: page.map((m) => ({ id: m.id, threadId: m.threadId })) } : {}),
      ...(next ? { nextPageToken: next } : {}),
      resultSizeEstimate: matching.length,
    };
  }

  function getMessage(id: string, format: string): unknown {
    const message = messages.get(id);
    if (!message) throw new HttpError(404, 'Requested entity was not found.');
    if (format === 'full') return message;
    const { payload, ...rest } = message;
    if (format === 'minimal') return rest;
    if (format === 'metadata')
      return { ...rest, payload: { ...payload, parts: undefined, body: { size: 0 } } };
    throw new HttpError(400, `fake: format=${format} is not supported`);
  }

  // ---- Pub/Sub -----------------------------------------------------------------------

  function requirePubsub(project: string): void {
    if (strict && !enabledServices.has(`projects/${project}/services/pubsub.googleapis.com`)) {
      throw new HttpError(
        403,
        `Cloud Pub/Sub API has not been used in project ${project} before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/pubsub.googleapis.com/overview?project=${project} then retry.`,
      );
    }
  }

  function checkEndpoint(pushConfig: unknown): FakeSubscription['pushConfig'] {
    const config = (pushConfig ?? {}) as FakeSubscription['pushConfig'];
    if (config.pushEndpoint === undefined) return { ...config };
    let ok = false;
    try {
      const url = new URL(String(config.pushEndpoint));
      ok = url.protocol === 'https:' || (!strict && url.protocol === 'http:');
    } catch {}
    if (!ok) {
      // Google echoes the endpoint, query string and all — clients must redact it.
      throw new HttpError(
        400,
        `Invalid push endpoint given (endpoint=${config.pushEndpoint}). Refer to https://cloud.google.com/pubsub/docs/push#configure_push_endpoints for more information.`,
      );
    }
    return { ...config, attributes: { 'x-goog-version': 'v1', ...(config.attributes ?? {}) } };
  }

  function topic(method: string, name: string, verb: string | undefined, body: unknown): unknown {
    const existing = topics.get(name);
    const id = name.split('/')[3] ?? '';
    if (verb === undefined && method === 'PUT') {
      if (existing) throw new HttpError(409, `Resource already exists in the project (resource=${id}).`);
      topics.set(name, { name });
      iam.set(name, { version: 1, etag: 'ACAB' });
      return { name };
    }
    if (!existing) throw new HttpError(404, `Resource not found (resource=${id}).`);
    if (verb === undefined && method === 'GET') return existing;
    if (verb === undefined && method === 'DELETE') {
      topics.delete(name);
      iam.delete(name);
      for (const sub of subscriptions.values()) if (sub.topic === name) sub.topic = '_deleted-topic_';
      return {};
    }
    const policy = iam.get(name) ?? { version: 1, etag: 'ACAB' };
    if (verb === 'getIamPolicy' && method === 'POST') return policy;
    if (verb === 'setIamPolicy' && method === 'POST') {
      const wanted = (body as { policy?: FakePolicy } | undefined)?.policy;
      if (!wanted || typeof wanted !== 'object')
        throw new HttpError(400, 'Invalid JSON payload: policy is required');
      if (wanted.etag !== undefined && wanted.etag !== policy.etag) {
        throw new HttpError(
          409,
          'There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.',
          'ABORTED',
        );
      }
      for (const binding of wanted.bindings ?? []) {
        const bad = (binding.members ?? []).find((m) => !MEMBER.test(m));
        if (bad !== undefined || !binding.role)
          throw new HttpError(400, `Invalid member or role: ${bad ?? ''}`);
      }
      const stored: FakePolicy = {
        version: wanted.version ?? 1,
        etag: Buffer.from(`etag-${++counter}`).toString('base64'),
        ...(wanted.bindings?.length ? { bindings: structuredClone(wanted.bindings) } : {}),
      };
      iam.set(name, stored);
      return stored;
    }
    throw new HttpError(404, 'Not Found');
  }

  function subscription(method: string, name: string, verb: string | undefined, body: unknown): unknown {
    const existing = subscriptions.get(name);
    const id = name.split('/')[3] ?? '';
    const request = (body ?? {}) as Record<string, unknown>;
    if (verb === undefined && method === 'PUT') {
      const topicName = typeof request.topic === 'string' ? request.topic : '';
      if (!topicName) throw new HttpError(400, 'Invalid resource name given (name=).');
      if (existing) throw new HttpError(409, `Resource already exists in the project (resource=${id}).`);
      if (!topics.has(topicName))
        throw new HttpError(404, `Resource not found (resource=${topicName.split('/')[3]}).`);
      const created: FakeSubscription = {
        ...request,
        name,
        topic: topicName,
        pushConfig: checkEndpoint(request.pushConfig),
        ackDeadlineSeconds: typeof request.ackDeadlineSeconds === 'number' ? request.ackDeadlineSeconds : 10,
        messageRetentionDuration: '604800s',
        expirationPolicy: { ttl: '2678400s' },
        state: 'ACTIVE',
      };
      subscriptions.set(name, created);
      return created;
    }
    if (!existing) throw new HttpError(404, `Resource not found (resource=${id}).`);
    if (verb === undefined && method === 'GET') return existing;
    if (verb === undefined && method === 'DELETE') {
      subscriptions.delete(name);
      return {};
    }
    if (verb === 'modifyPushConfig' && method === 'POST') {
      if (!request.pushConfig || typeof request.pushConfig !== 'object') {
        throw new HttpError(400, 'Invalid JSON payload: pushConfig is required');
      }
      existing.pushConfig = checkEndpoint(request.pushConfig);
      return {};
    }
    throw new HttpError(404, 'Not Found');
  }

  // ---- Service Usage -----------------------------------------------------------------

  const serviceResource = (project: string, service: string) => ({
    name: `projects/123456789012/services/${service}`,
    config: { name: service },
    state: enabledServices.has(`projects/${project}/services/${service}`) ? 'ENABLED' : 'DISABLED',
    parent: 'projects/123456789012',
  });

  function operationBody(name: string, op: { project: string; service: string; done: boolean }) {
    if (!op.done) return { name, metadata: { '@type': 'type.googleapis.com/google.protobuf.Empty' } };
    return {
      name,
      done: true,
      response: {
        '@type': 'type.googleapis.com/google.api.serviceusage.v1.EnableServiceResponse',
        service: serviceResource(op.project, op.service),
      },
    };
  }

  function services(method: string, project: string, service: string, verb: string | undefined): unknown {
    if (!/\.googleapis\.com$/.test(service)) {
      throw new HttpError(403, `Not found or permission denied for service(s): ${service}.`);
    }
    if (verb === undefined && method === 'GET') return serviceResource(project, service);
    if (verb === 'enable' && method === 'POST') {
      const key = `projects/${project}/services/${service}`;
      if (enabledServices.has(key)) {
        return operationBody('operations/noop.DONE_OPERATION', { project, service, done: true });
      }
      const name = `operations/acf.p2-123456789012-${randomBytes(8).toString('hex')}`;
      const op = { project, service, done: !options.slowEnable };
      operations.set(name, op);
      if (op.done) enabledServices.add(key);
      return operationBody(name, op);
    }
    throw new HttpError(404, 'Not Found');
  }

  function operation(name: string): unknown {
    const op = operations.get(name);
    if (!op) throw new HttpError(404, `Operation ${name} not found.`);
    // A slow enable finishes the first time someone looks.
    op.done = true;
    enabledServices.add(`projects/${op.project}/services/${op.service}`);
    return operationBody(name, op);
  }

  // ---- Routing -----------------------------------------------------------------------

  function route(method: string, segments: string[], query: URLSearchParams, body: unknown): unknown {
    const [root, version, kind] = segments;
    if (root === 'gmail' && version === 'v1' && kind === 'users' && segments[3] !== undefined) {
      return gmail(method, segments[3], segments.slice(4), query, body);
    }
    if (root !== 'v1') throw new HttpError(404, 'Not Found');
    if (version === 'operations' && segments.length >= 3 && method === 'GET') {
      return operation(segments.slice(1).join('/'));
    }
    // The custom verb (`:enable`, `:getIamPolicy`, …) rides on the last segment.
    const last = segments[segments.length - 1] ?? '';
    const colon = last.lastIndexOf(':');
    const verb = colon > 0 ? last.slice(colon + 1) : undefined;
    const parts = [...segments.slice(1, -1), colon > 0 ? last.slice(0, colon) : last];
    const [projects, project, collection, id] = parts;
    if (projects !== 'projects' || !project || !id || parts.length !== 4)
      throw new HttpError(404, 'Not Found');
    const name = parts.join('/');
    if (collection === 'services') return services(method, project, id, verb);
    if (collection !== 'topics' && collection !== 'subscriptions') throw new HttpError(404, 'Not Found');
    requirePubsub(project);
    if (!RESOURCE_ID.test(id)) throw new HttpError(400, `Invalid [${collection}] name: (name=${name})`);
    return collection === 'topics' ? topic(method, name, verb, body) : subscription(method, name, verb, body);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    const query: Record<string, string | string[]> = {};
    for (const key of new Set(url.searchParams.keys())) {
      const all = url.searchParams.getAll(key);
      query[key] = all.length === 1 ? (all[0] as string) : all;
    }
    const call: FakeGoogleCall = { method, path: url.pathname, query, body: undefined, status: 0 };
    calls.push(call);
    const send = (status: number, payload: unknown) => {
      call.status = status;
      res
        .writeHead(status, { 'content-type': 'application/json; charset=UTF-8' })
        .end(JSON.stringify(payload));
    };

    const failure = failures.find((f) =>
      typeof f.match === 'string'
        ? `${method} ${url.pathname}`.includes(f.match)
        : f.match.test(`${method} ${url.pathname}`),
    );
    if (failure) {
      if (--failure.times <= 0) failures.splice(failures.indexOf(failure), 1);
      if (failure.status === 0) {
        req.socket.destroy();
        return;
      }
      send(failure.status, {
        error: {
          code: failure.status,
          message: failure.message ?? 'Injected failure',
          status: REASONS[failure.status] ?? 'UNKNOWN',
        },
      });
      return;
    }

    if (method === 'POST' && url.pathname === '/token') {
      const params = parseForm(raw, req.headers['content-type']);
      call.body = { grant_type: params.grant_type, client_id: params.client_id };
      const answer = tokenEndpoint(params);
      send(answer.status, answer.body);
      return;
    }
    if (method === 'GET' && url.pathname === '/oauth2/v3/certs') {
      send(200, jwks);
      return;
    }
    if (method === 'GET' && url.pathname === '/o/oauth2/v2/auth') {
      call.status = 302;
      consent(url.searchParams, res);
      return;
    }

    let body: unknown;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      call.body = raw;
      send(400, {
        error: { code: 400, message: 'Invalid JSON payload received.', status: 'INVALID_ARGUMENT' },
      });
      return;
    }
    call.body = body;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const expiry = token ? accessTokens.get(token) : undefined;
    if (expiry === undefined || expiry <= Date.now()) {
      res.setHeader('www-authenticate', 'Bearer realm="https://accounts.google.com/", error="invalid_token"');
      send(401, {
        error: {
          code: 401,
          message:
            'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
          status: 'UNAUTHENTICATED',
        },
      });
      return;
    }
    try {
      const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
      send(200, route(method, segments, url.searchParams, body));
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      send(error.status, { error: { code: error.status, message: error.message, status: error.reason } });
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 500, message: String(error), status: 'INTERNAL' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const fake: FakeGoogle = {
    url,
    endpoints: {
      oauthToken: `${url}/token`,
      gmail: url,
      pubsub: url,
      serviceUsage: url,
      oidcCerts: `${url}/oauth2/v3/certs`,
    },
    authUrl: `${url}/o/oauth2/v2/auth`,
    account,
    clientId,
    clientSecret,
    get refreshToken() {
      return refreshToken;
    },
    set refreshToken(value: string) {
      refreshToken = value;
    },
    get credentials() {
      return { client_id: clientId, client_secret: clientSecret, refresh_token: refreshToken };
    },
    get historyId() {
      return historyId;
    },
    historyPageSize: options.historyPageSize,
    denyConsent: false,
    messages,
    history,
    topics,
    iam,
    subscriptions,
    enabledServices,
    calls,
    tokenRequests,
    watchCalls,
    authRequests,
    addMessage(spec) {
      const id = spec.id ?? randomBytes(8).toString('hex');
      if (messages.has(id)) throw new Error(`fake google: message ${id} already exists`);
      const threadId = spec.threadId ?? id;
      const labelIds = spec.labelIds ?? ['INBOX', 'UNREAD'];
      const now = Date.now();
      const top = [
        { name: 'Delivered-To', value: account },
        { name: 'From', value: spec.from ?? 'Sender <sender@example.org>' },
        { name: 'To', value: spec.to ?? account },
        { name: 'Subject', value: spec.subject ?? '' },
        { name: 'Date', value: spec.date ?? new Date(now).toUTCString().replace('GMT', '+0000') },
        { name: 'Message-ID', value: `<${id}@mail.example.org>` },
        { name: 'MIME-Version', value: '1.0' },
      ];
      historyId += 1;
      const text = spec.textBody ?? (spec.htmlBody ?? '').replace(/<[^>]*>/g, '');
      const message: GmailMessage = {
        id,
        threadId,
        labelIds: [...labelIds],
        snippet: spec.snippet ?? escapeHtml(text.replace(/\s+/g, ' ').trim().slice(0, 200)),
        historyId: String(historyId),
        internalDate: String(now),
        sizeEstimate: 0,
        payload: buildPayload(spec, top),
      };
      message.sizeEstimate = JSON.stringify(message.payload).length;
      messages.set(id, message);
      history.push({
        id: String(historyId),
        messages: [{ id, threadId }],
        messagesAdded: [{ message: { id, threadId, labelIds: [...labelIds] } }],
      });
      return message;
    },
    expireHistoryBefore(id) {
      expiredBefore = Number(id);
    },
    revokeAccessTokens() {
      accessTokens.clear();
    },
    revokeRefreshToken() {
      refreshRevoked = true;
      accessTokens.clear();
    },
    pushEnvelope(opts = {}) {
      const messageId = opts.messageId ?? String(1_000_000_000_000 + ++counter);
      const publishTime = new Date().toISOString();
      const data = JSON.stringify({
        emailAddress: opts.emailAddress ?? account,
        historyId: Number(opts.historyId ?? historyId),
      });
      return {
        message: {
          data: Buffer.from(data).toString('base64'),
          messageId,
          message_id: messageId,
          publishTime,
          publish_time: publishTime,
        },
        subscription:
          [...subscriptions.keys()][0] ?? 'projects/fake-project/subscriptions/agentgate-gmail-push',
      };
    },
    failNext(match, status, message, times = 1) {
      failures.push({ match, status, message, times });
    },
    oidcEmail: OIDC_EMAIL,
    idToken(claims, opts = {}) {
      const now = Math.floor(Date.now() / 1000);
      const merged: Record<string, unknown> = {
        iss: 'https://accounts.google.com',
        sub: '112233445566778899000',
        email: OIDC_EMAIL,
        email_verified: true,
        iat: now,
        exp: now + 3600,
        ...claims,
      };
      for (const [key, value] of Object.entries(merged)) if (value === undefined) delete merged[key];
      const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const header = { alg: opts.alg ?? 'RS256', kid: opts.kid ?? OIDC_KID, typ: 'JWT' };
      const unsigned = `${part(header)}.${part(merged)}`;
      const key = (opts.foreignKey ? foreignKey : signingKey).privateKey;
      return `${unsigned}.${sign('RSA-SHA256', Buffer.from(unsigned), key).toString('base64url')}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}

function parseForm(raw: string, contentType: string | undefined): Record<string, string> {
  if ((contentType ?? '').includes('application/json')) {
    try {
      const parsed = JSON.parse(raw) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
    } catch {
      return {};
    }
  }
  return Object.fromEntries(new URLSearchParams(raw));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
