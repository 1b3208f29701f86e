/**
 * A loopback fake of both halves of Teams delivery: the Microsoft identity
 * platform's client-credentials token endpoint and the Bot Framework Connector's
 * `POST /v3/conversations/{id}/activities`. It checks what they check, answers in
 * their shapes, counts token requests, and records activities per conversation.
 *
 *     const teams = await startFakeMsTeams({ appId: APP, appPassword: PW, conversations: ['19:abc@thread.v2'] });
 *     // config: channels.msteams = { appId: APP, appPassword: PW, tokenUrl: teams.tokenUrl, serviceUrl: teams.serviceUrl }
 *     expect(teams.messagesFor('19:abc@thread.v2').map((a) => a.text)).toEqual(['hello']);
 *     expect(teams.tokenRequests).toBe(1);
 *     teams.expireTokens();                           // issued tokens stop working (401)
 *     teams.failNext(1, 'rate_limit', { retryAfter: 3 });
 *     await teams.close();
 *
 * Token endpoint, `POST /{tenant}/oauth2/v2.0/token` (`tokenUrl` uses the tenant
 * given, default `botframework.com`): the tenant is known (else 400
 * `invalid_request` AADSTS90002), the body is form-encoded (else 400
 * `invalid_request` AADSTS900144), `grant_type=client_credentials` (else 400
 * `unsupported_grant_type`), `client_id` is the app (else 400
 * `unauthorized_client` AADSTS700016), `client_secret` matches (else 401
 * `invalid_client` AADSTS7000215), `scope` is `https://api.botframework.com/.default`
 * (else 400 `invalid_scope` AADSTS1002012). Answer `{token_type:"Bearer",
 * expires_in, ext_expires_in, access_token}`; errors `{error, error_description,
 * error_codes, timestamp, trace_id, correlation_id}`.
 *
 * Connector, `POST /teams/v3/conversations/{id}/activities` (`serviceUrl` ends in
 * `/teams/`, as Teams' does): the bearer token is one it issued and has not
 * expired (else 401 `{message:"Authorization has been denied for this request."}`),
 * the conversation exists (else 404 ConversationNotFound), the bot is in it (a
 * conversation added with `blocked: true` answers 403
 * BotNotInConversationRoster), the activity is a `message` with text (else 400
 * BadArgument), at most 100 KB as UTF-16 (else 413 MessageSizeTooBig). Success is
 * 201 `{id}`; errors `{error:{code, message}}`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { dropConnection, FailureQueue, readBody, sendJson, startServer } from './support.js';

export interface FakeMsTeamsOptions {
  appId: string;
  appPassword: string;
  /** The tenant the app lives in, also accepted besides `botframework.com`. */
  tenantId?: string;
  /** Conversation ids the bot is a member of. */
  conversations?: (string | { id: string; blocked?: boolean })[];
  /** `expires_in` of issued tokens, in seconds; default 3600. */
  tokenLifetimeSeconds?: number;
}

export interface FakeMsTeamsActivity {
  id: string;
  conversationId: string;
  text: string;
  /** The activity as the client sent it. */
  activity: Record<string, unknown>;
}

export interface FakeMsTeamsRequest {
  endpoint: 'token' | 'activity' | 'other';
  method: string;
  /** The path, decoded conversation id included. */
  path: string;
  contentType: string | undefined;
  /** Form fields of a token request (client_secret replaced by `<secret>`) or the JSON activity. */
  body: unknown;
  status: number;
}

/**
 * `rate_limit` 429 with Retry-After; `server_error` 500 (`ServiceError` on the
 * Connector, `temporarily_unavailable` on the token endpoint); `network` (the
 * connection is dropped).
 */
export type FakeMsTeamsFailure = 'rate_limit' | 'server_error' | 'network';

export interface FakeMsTeams {
  /** The server root. */
  url: string;
  /** `channels.msteams.tokenUrl` for the multi-tenant default (`/botframework.com/oauth2/v2.0/token`). */
  tokenUrl: string;
  /** `channels.msteams.serviceUrl` (`/teams/`). */
  serviceUrl: string;
  activities: FakeMsTeamsActivity[];
  messagesFor(conversationId: string): FakeMsTeamsActivity[];
  requests: FakeMsTeamsRequest[];
  /** Token requests that got a token. */
  readonly tokenRequests: number;
  /** Makes every token issued so far invalid, as if it had expired or been revoked. */
  expireTokens(): void;
  /** The next `count` calls to `target` (default: activities) fail as `kind`; with `after`, that many succeed first. */
  failNext(
    count: number,
    kind?: FakeMsTeamsFailure,
    options?: { retryAfter?: number; after?: number; target?: 'activity' | 'token' },
  ): void;
  addConversation(id: string, options?: { blocked?: boolean }): void;
  /** Forgets the messages and requests recorded so far and the failures still queued; what the fake knows (recipients, chats, tokens) stays, so one fake serves several tests. */
  reset(): void;
  close(): Promise<void>;
}

export const BOT_FRAMEWORK_SCOPE = 'https://api.botframework.com/.default';
const MAX_ACTIVITY_UTF16_BYTES = 100 * 1024;

export async function startFakeMsTeams(options: FakeMsTeamsOptions): Promise<FakeMsTeams> {
  const tenants = new Set(['botframework.com', ...(options.tenantId ? [options.tenantId] : [])]);
  const conversations = new Map<string, { blocked: boolean }>();
  const addConversation = (id: string, spec: { blocked?: boolean } = {}) =>
    void conversations.set(id, { blocked: spec.blocked ?? false });
  for (const item of options.conversations ?? []) {
    if (typeof item === 'string') addConversation(item);
    else addConversation(item.id, item);
  }
  const lifetime = options.tokenLifetimeSeconds ?? 3600;
  /** Issued tokens and when they stop working. */
  const issued = new Map<string, number>();
  const activities: FakeMsTeamsActivity[] = [];
  const requests: FakeMsTeamsRequest[] = [];
  const failures = {
    activity: new FailureQueue<FakeMsTeamsFailure>(1),
    token: new FailureQueue<FakeMsTeamsFailure>(1),
  };
  let tokenRequests = 0;

  const server = await startServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = await readBody(req);
    const contentType = req.headers['content-type'];
    const tokenRoute = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    const activityRoute = /^\/teams\/v3\/conversations\/([^/]+)\/activities\/?$/.exec(url.pathname);
    const record: FakeMsTeamsRequest = {
      endpoint: tokenRoute ? 'token' : activityRoute ? 'activity' : 'other',
      method: req.method ?? '',
      path: decodeURIComponent(url.pathname),
      contentType,
      body: undefined,
      status: 0,
    };
    requests.push(record);
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      sendJson(res, status, body, headers);
    };

    if (tokenRoute && req.method === 'POST') {
      const form = contentType?.startsWith('application/x-www-form-urlencoded') ? body.form : undefined;
      record.body = form && 'client_secret' in form ? { ...form, client_secret: '<secret>' } : form;
      const aadError = (status: number, error: string, code: number, description: string) =>
        reply(status, {
          error,
          error_description: `AADSTS${code}: ${description}\r\nTrace ID: ${randomUUID()}\r\nCorrelation ID: ${randomUUID()}\r\nTimestamp: ${new Date().toISOString()}`,
          error_codes: [code],
          timestamp: new Date().toISOString(),
          trace_id: randomUUID(),
          correlation_id: randomUUID(),
        });
      if (!tenants.has(decodeURIComponent(tokenRoute[1] ?? ''))) {
        return aadError(400, 'invalid_request', 90002, `Tenant '${tokenRoute[1]}' not found.`);
      }
      if (!form) {
        return aadError(
          400,
          'invalid_request',
          900144,
          "The request body must contain the following parameter: 'grant_type'.",
        );
      }
      if (form.grant_type !== 'client_credentials') {
        return aadError(400, 'unsupported_grant_type', 70003, 'The app requested an unsupported grant type.');
      }
      if (form.client_id !== options.appId) {
        return aadError(
          400,
          'unauthorized_client',
          700016,
          `Application with identifier '${form.client_id ?? ''}' was not found in the directory.`,
        );
      }
      if (form.client_secret !== options.appPassword) {
        return aadError(
          401,
          'invalid_client',
          7000215,
          `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${options.appId}'.`,
        );
      }
      if (form.scope !== BOT_FRAMEWORK_SCOPE) {
        return aadError(
          400,
          'invalid_scope',
          1002012,
          `The provided value for scope ${form.scope ?? ''} is not valid.`,
        );
      }
      const failure = failures.token.next();
      if (failure) {
        if (failure.kind === 'network') return dropConnection(req, record);
        if (failure.kind === 'rate_limit') {
          return reply(
            429,
            {
              error: 'temporarily_unavailable',
              error_description:
                'AADSTS50196: The server terminated an operation because it encountered a client request loop.',
            },
            { 'retry-after': String(failure.retryAfter) },
          );
        }
        return aadError(
          503,
          'temporarily_unavailable',
          90033,
          'A transient error has occurred. Please try again.',
        );
      }
      tokenRequests++;
      const accessToken = `eyJ0eXAiOiJKV1QifQ.${randomBytes(24).toString('base64url')}.fake`;
      issued.set(accessToken, Date.now() + lifetime * 1000);
      return reply(200, {
        token_type: 'Bearer',
        expires_in: lifetime,
        ext_expires_in: lifetime,
        access_token: accessToken,
      });
    }

    if (activityRoute && req.method === 'POST') {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const expiry = bearer ? issued.get(bearer) : undefined;
      if (expiry === undefined || Date.now() >= expiry) {
        return reply(401, { message: 'Authorization has been denied for this request.' });
      }
      const activity = body.json;
      record.body = activity;
      const connectorError = (
        status: number,
        code: string,
        message: string,
        headers?: Record<string, string>,
      ) => reply(status, { error: { code, message } }, headers);

      const failure = failures.activity.next();
      if (failure) {
        if (failure.kind === 'network') return dropConnection(req, record);
        if (failure.kind === 'rate_limit') {
          return connectorError(429, 'Throttled', 'Too many requests', {
            'retry-after': String(failure.retryAfter),
          });
        }
        return connectorError(500, 'ServiceError', 'Unknown error');
      }

      const conversationId = decodeURIComponent(activityRoute[1] ?? '');
      const conversation = conversations.get(conversationId);
      if (!conversation) return connectorError(404, 'ConversationNotFound', 'Conversation not found.');
      if (conversation.blocked) {
        return connectorError(
          403,
          'BotNotInConversationRoster',
          'The bot is not part of the conversation roster.',
        );
      }
      if (!activity || typeof activity !== 'object' || Array.isArray(activity)) {
        return connectorError(400, 'BadSyntax', 'Request body is not a valid activity.');
      }
      const sent = activity as Record<string, unknown>;
      if (sent.type !== 'message') return connectorError(400, 'BadArgument', 'Unknown activity type');
      if (typeof sent.text !== 'string' || sent.text === '') {
        return connectorError(400, 'BadArgument', 'Activity must have text or attachments');
      }
      if (JSON.stringify(sent).length * 2 > MAX_ACTIVITY_UTF16_BYTES) {
        return connectorError(413, 'MessageSizeTooBig', 'Message size too big');
      }
      const id = `1:${randomBytes(12).toString('base64url')}`;
      activities.push({ id, conversationId, text: sent.text, activity: sent });
      return reply(201, { id });
    }

    reply(404, { error: { code: 'NotFound', message: `No route for ${req.method} ${url.pathname}` } });
  });

  const root = server.url;

  return {
    url: root,
    tokenUrl: `${root}/botframework.com/oauth2/v2.0/token`,
    serviceUrl: `${root}/teams/`,
    activities,
    messagesFor: (conversationId) =>
      activities.filter((activity) => activity.conversationId === conversationId),
    requests,
    get tokenRequests() {
      return tokenRequests;
    },
    expireTokens() {
      for (const token of issued.keys()) issued.set(token, 0);
    },
    failNext(count, kind = 'rate_limit', failOptions = {}) {
      failures[failOptions.target ?? 'activity'].push(count, kind, failOptions);
    },
    addConversation,
    reset() {
      activities.length = 0;
      requests.length = 0;
      failures.activity.clear();
      failures.token.clear();
    },
    close: server.close,
  };
}
