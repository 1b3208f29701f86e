/**
 * The Teams adapter against the loopback fake of the token endpoint and the Bot
 * Connector: delivery, token caching and refresh, and how each failure maps to a
 * DeliveryError (never with the app password or a token).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChannelAdapters } from '../../src/channels/index.js';
import {
  BOT_FRAMEWORK_SCOPE,
  createMsTeamsAdapter,
  MSTEAMS_TEXT_LIMIT,
} from '../../src/channels/platforms/msteams/index.js';
import { DeliveryError } from '../../src/channels/types.js';
import { type FakeMsTeams, startFakeMsTeams } from '../fakes/msteams.js';
import { sleep } from '../helpers/wait.js';

const APP_ID = '00000000-1111-2222-3333-444444444444';
const PASSWORD = 'Xy8Q~app pass+word/secret';
const CHAT = '19:abcdef0123456789@thread.v2';
const BLOCKED = 'a:1blockedPersonalChat';
let teams: FakeMsTeams;

beforeAll(async () => {
  teams = await startFakeMsTeams({
    appId: APP_ID,
    appPassword: PASSWORD,
    conversations: [CHAT, { id: BLOCKED, blocked: true }],
  });
});
afterAll(async () => {
  await teams.close();
});
beforeEach(() => {
  teams.activities.length = 0;
  teams.requests.length = 0;
});

type Overrides = {
  appId?: string;
  appPassword?: string;
  tenantId?: string;
  tokenUrl?: string;
  serviceUrl?: string;
};
const adapter = (config: Overrides = {}, options: { timeoutMs?: number; fetch?: typeof fetch } = {}) =>
  createMsTeamsAdapter(
    {
      appId: APP_ID,
      appPassword: PASSWORD,
      tokenUrl: teams.tokenUrl,
      serviceUrl: teams.serviceUrl,
      ...config,
    },
    options,
  );

const hanging: typeof fetch = (_url, init) =>
  new Promise((_resolve, reject) =>
    init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
  );

/** The DeliveryError a send rejects with, checked never to hold the password in any encoding. */
async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  const message = (error as DeliveryError).message;
  expect(message).not.toContain(PASSWORD);
  expect(message).not.toContain(encodeURIComponent(PASSWORD));
  expect(message).not.toContain(new URLSearchParams({ p: PASSWORD }).toString().slice(2));
  expect(message).not.toContain('eyJ0eXAi');
  return error as DeliveryError;
}

/** Passes token requests to the fake and answers activities itself. */
const connector =
  (status: number, body: unknown, headers: Record<string, string> = {}): typeof fetch =>
  async (input, init) =>
    String(input).includes('/oauth2/')
      ? fetch(input, init)
      : new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers });

describe('msteams adapter: delivery', () => {
  it('gets a token by client credentials, then posts a message activity with it', async () => {
    const result = await adapter().send({ to: CHAT, text: 'Build #12 passed' });
    const [tokenCall, activityCall] = teams.requests;
    expect(tokenCall).toMatchObject({
      endpoint: 'token',
      method: 'POST',
      path: '/botframework.com/oauth2/v2.0/token',
      contentType: 'application/x-www-form-urlencoded',
      body: {
        grant_type: 'client_credentials',
        client_id: APP_ID,
        client_secret: '<secret>',
        scope: BOT_FRAMEWORK_SCOPE,
      },
      status: 200,
    });
    expect(activityCall).toMatchObject({
      endpoint: 'activity',
      method: 'POST',
      path: `/teams/v3/conversations/${CHAT}/activities`,
      contentType: 'application/json',
      body: { type: 'message', text: 'Build #12 passed' },
      status: 201,
    });
    expect(result).toEqual({ messageId: teams.activities[0]?.id });
    expect(teams.messagesFor(CHAT).map((a) => a.text)).toEqual(['Build #12 passed']);
  });

  it('URL-encodes the conversation id', async () => {
    const seen: string[] = [];
    const spy: typeof fetch = async (input, init) => {
      seen.push(String(input));
      return fetch(input, init);
    };
    await adapter({}, { fetch: spy }).send({ to: CHAT, text: 'hi' });
    expect(seen[1]).toBe(`${teams.serviceUrl}v3/conversations/${encodeURIComponent(CHAT)}/activities`);
  });

  it('defaults the token endpoint to the botframework.com tenant, or the configured one', async () => {
    const urls: string[] = [];
    const capture: typeof fetch = async (input) => {
      urls.push(String(input));
      return new Response('{}', { status: 503 });
    };
    const base = { appId: APP_ID, appPassword: PASSWORD, serviceUrl: teams.serviceUrl };
    await failure(createMsTeamsAdapter(base, { fetch: capture }).send({ to: CHAT, text: 'hi' }));
    await failure(
      createMsTeamsAdapter({ ...base, tenantId: 'contoso.onmicrosoft.com' }, { fetch: capture }).send({
        to: CHAT,
        text: 'hi',
      }),
    );
    expect(urls).toEqual([
      'https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token',
      'https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token',
    ]);
  });

  it('declares 28000 characters and refuses longer or empty text without a request', async () => {
    expect(adapter().maxMessageLength).toBe(MSTEAMS_TEXT_LIMIT);
    expect((await failure(adapter().send({ to: CHAT, text: 'x'.repeat(28_001) }))).permanent).toBe(true);
    expect((await failure(adapter().send({ to: CHAT, text: '\n' }))).permanent).toBe(true);
    expect(teams.requests).toHaveLength(0);
  });
});

describe('msteams adapter: the token', () => {
  it('is cached across sends', async () => {
    const before = teams.tokenRequests;
    const teamsAdapter = adapter();
    for (const text of ['one', 'two', 'three']) await teamsAdapter.send({ to: CHAT, text });
    expect(teams.tokenRequests - before).toBe(1);
    expect(teams.messagesFor(CHAT)).toHaveLength(3);
  });

  it('is refreshed shortly before it expires', async () => {
    const shortLived = await startFakeMsTeams({
      appId: APP_ID,
      appPassword: PASSWORD,
      conversations: [CHAT],
      tokenLifetimeSeconds: 1,
    });
    try {
      const teamsAdapter = adapter({ tokenUrl: shortLived.tokenUrl, serviceUrl: shortLived.serviceUrl });
      await teamsAdapter.send({ to: CHAT, text: 'one' });
      await teamsAdapter.send({ to: CHAT, text: 'two' });
      expect(shortLived.tokenRequests).toBe(1);
      // Half of a 1 s life is the margin here: at 600 ms the token is due for replacement.
      await sleep(600);
      await teamsAdapter.send({ to: CHAT, text: 'three' });
      expect(shortLived.tokenRequests).toBe(2);
      expect(shortLived.requests.every((r) => r.status !== 401)).toBe(true);
    } finally {
      await shortLived.close();
    }
  });

  it('is dropped and fetched again once when the Connector answers 401', async () => {
    const teamsAdapter = adapter();
    await teamsAdapter.send({ to: CHAT, text: 'one' });
    const before = teams.tokenRequests;
    teams.expireTokens();
    await teamsAdapter.send({ to: CHAT, text: 'two' });
    expect(teams.tokenRequests - before).toBe(1);
    expect(teams.requests.filter((r) => r.endpoint === 'activity').map((r) => r.status)).toEqual([
      201, 401, 201,
    ]);
    expect(teams.messagesFor(CHAT).map((a) => a.text)).toEqual(['one', 'two']);
  });

  it('gives up after the fresh token is refused too (permanent)', async () => {
    let activityCalls = 0;
    const refusing: typeof fetch = async (input, init) => {
      if (String(input).includes('/oauth2/')) return fetch(input, init);
      activityCalls++;
      return new Response(JSON.stringify({ message: 'Authorization has been denied for this request.' }), {
        status: 401,
      });
    };
    const error = await failure(adapter({}, { fetch: refusing }).send({ to: CHAT, text: 'hi' }));
    expect(activityCalls).toBe(2);
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('Authorization has been denied');
  });

  it('treats a wrong app password (invalid_client) as permanent, without the password', async () => {
    const error = await failure(adapter({ appPassword: `${PASSWORD}-old` }).send({ to: CHAT, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('invalid_client');
    expect(error.message).toContain('AADSTS7000215');
    expect(error.message).not.toContain('Trace ID');
    expect(error.message).toContain('channels.msteams.appId, appPassword and tenantId');
    expect(teams.activities).toHaveLength(0);
  });

  it('treats an unknown app (unauthorized_client) as permanent', async () => {
    const error = await failure(
      adapter({ appId: 'ffffffff-0000-0000-0000-000000000000' }).send({ to: CHAT, text: 'hi' }),
    );
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('unauthorized_client');
  });

  it('treats a throttled or failing token endpoint as retryable', async () => {
    teams.failNext(1, 'rate_limit', { target: 'token', retryAfter: 5 });
    const throttled = await failure(adapter().send({ to: CHAT, text: 'hi' }));
    expect(throttled.permanent).toBe(false);
    expect(throttled.retryAfterMs).toBe(5000);
    teams.failNext(1, 'server_error', { target: 'token' });
    expect((await failure(adapter().send({ to: CHAT, text: 'hi' }))).permanent).toBe(false);
    teams.failNext(1, 'network', { target: 'token' });
    const dropped = await failure(adapter().send({ to: CHAT, text: 'hi' }));
    expect(dropped.permanent).toBe(false);
    expect(dropped.message).toMatch(/^msteams: token request failed \([A-Z_]+\)$/);
  });
});

describe('msteams adapter: failures', () => {
  it('maps 429 to a retryable error waiting Retry-After', async () => {
    teams.failNext(1, 'rate_limit', { retryAfter: 3 });
    const error = await failure(adapter().send({ to: CHAT, text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.retryAfterMs).toBe(3000);
    expect(error.message).toContain('Throttled');
    await expect(adapter().send({ to: CHAT, text: 'hi' })).resolves.toHaveProperty('messageId');
  });

  it('treats an unknown conversation (404) and a bot not in it (403) as permanent', async () => {
    const missing = await failure(adapter().send({ to: '19:nope@thread.v2', text: 'hi' }));
    expect(missing.permanent).toBe(true);
    expect(missing.message).toContain('ConversationNotFound');
    const blocked = await failure(adapter().send({ to: BLOCKED, text: 'hi' }));
    expect(blocked.permanent).toBe(true);
    expect(blocked.message).toContain('BotNotInConversationRoster');
  });

  it('treats a message too large (413) and a bad activity (400) as permanent', async () => {
    const tooBig = connector(413, { error: { code: 'MessageSizeTooBig', message: 'Message size too big' } });
    const error = await failure(adapter({}, { fetch: tooBig }).send({ to: CHAT, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toBe('msteams: Message size too big (MessageSizeTooBig, HTTP 413)');
    const bad = connector(400, { error: { code: 'BadArgument', message: 'Unknown activity type' } });
    expect((await failure(adapter({}, { fetch: bad }).send({ to: CHAT, text: 'hi' }))).permanent).toBe(true);
  });

  it('treats 5xx and dropped connections as retryable', async () => {
    teams.failNext(1, 'server_error');
    const error = await failure(adapter().send({ to: CHAT, text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.message).toContain('ServiceError');
    teams.failNext(1, 'network');
    expect((await failure(adapter().send({ to: CHAT, text: 'hi' }))).permanent).toBe(false);
  });

  it('keeps the token out of errors even when the Connector echoes it', async () => {
    const echo: typeof fetch = async (input, init) => {
      if (String(input).includes('/oauth2/')) return fetch(input, init);
      const authorization = new Headers(init?.headers).get('authorization');
      return new Response(
        JSON.stringify({ error: { code: 'BadArgument', message: `odd header ${authorization}` } }),
        {
          status: 400,
        },
      );
    };
    const error = await failure(adapter({}, { fetch: echo }).send({ to: CHAT, text: 'hi' }));
    expect(error.message).toContain('Bearer [redacted]');
  });

  it('times out a token request that gets no answer, and rethrows the caller abort as it is', async () => {
    const slow = await failure(adapter({}, { fetch: hanging, timeoutMs: 50 }).send({ to: CHAT, text: 'hi' }));
    expect(slow.permanent).toBe(false);
    expect(slow.message).toContain('no answer from the token endpoint');

    const controller = new AbortController();
    const reason = new Error('shutting down');
    const sending = adapter({}, { fetch: hanging }).send({ to: CHAT, text: 'hi' }, controller.signal);
    controller.abort(reason);
    await expect(sending).rejects.toBe(reason);
  });

  it('rethrows an abort during the activity call as it is', async () => {
    const controller = new AbortController();
    const reason = new Error('run timed out');
    const stallActivity: typeof fetch = (input, init) => {
      if (String(input).includes('/oauth2/')) return fetch(input, init);
      queueMicrotask(() => controller.abort(reason));
      return hanging(input, init);
    };
    await expect(
      adapter({}, { fetch: stallActivity }).send({ to: CHAT, text: 'hi' }, controller.signal),
    ).rejects.toBe(reason);
  });
});

describe('createChannelAdapters', () => {
  it('creates the msteams adapter from its config block', async () => {
    const adapters = createChannelAdapters({
      msteams: {
        appId: APP_ID,
        appPassword: PASSWORD,
        tokenUrl: teams.tokenUrl,
        serviceUrl: teams.serviceUrl,
      },
    });
    expect([...adapters.keys()]).toEqual(['msteams']);
    await adapters.get('msteams')?.send({ to: CHAT, text: 'via the registry' });
    expect(teams.activities.map((a) => a.text)).toEqual(['via the registry']);
  });
});
