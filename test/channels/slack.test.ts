/**
 * The Slack adapter against the loopback Web API fake: delivery, the request's
 * shape, and how each `{ok:false, error}` maps to a DeliveryError (without the token).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSlackAdapter, slackEscape } from '../../src/channels/platforms/slack/index.js';
import { DeliveryError } from '../../src/channels/types.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack.js';

const TOKEN = 'xoxb-1234567890-0987654321-FakeSecretPart0123456789';
const REVOKED = 'xoxb-1111111111-2222222222-RevokedSecret0123456';
const INACTIVE = 'xoxb-3333333333-4444444444-InactiveSecret012345';
const CHANNEL = 'C0123456789';

let sl: FakeSlack;

beforeAll(async () => {
  sl = await startFakeSlack({
    token: TOKEN,
    revokedTokens: [REVOKED],
    inactiveTokens: [INACTIVE],
    channels: [
      { id: CHANNEL, name: 'builds' },
      { id: 'C0ARCHIVED1', archived: true },
      { id: 'C0NOTMEMBER', member: false },
    ],
  });
});
afterAll(async () => {
  await sl.close();
});
beforeEach(() => {
  sl.messages.length = 0;
  sl.requests.length = 0;
});

const adapter = (botToken = TOKEN, fetchImpl?: typeof fetch) =>
  createSlackAdapter({ botToken, apiBaseUrl: sl.url }, fetchImpl ? { fetch: fetchImpl } : {});

async function failure(promise: Promise<unknown>, secret = TOKEN): Promise<DeliveryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  expect((error as DeliveryError).message).not.toContain(secret);
  return error as DeliveryError;
}

/** What Slack answers for an error it reports in the body (HTTP 200). */
const slackError =
  (error: string, extra: Record<string, unknown> = {}): typeof fetch =>
  async () =>
    Response.json({ ok: false, error, ...extra });

const hanging: typeof fetch = (_url, init) =>
  new Promise((_resolve, reject) =>
    init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
  );

describe('slack adapter: delivery', () => {
  it('posts JSON {channel, text} to chat.postMessage and returns the ts', async () => {
    const slack = adapter();
    expect(slack.id).toBe('slack');
    expect(slack.maxMessageLength).toBe(40_000);
    const result = await slack.send({ to: CHANNEL, text: 'Build #12 passed' });
    expect(result).toEqual({ messageId: sl.messages[0]?.ts });
    expect(result.messageId).toMatch(/^\d+\.\d{6}$/);
    expect(sl.requests[0]).toMatchObject({
      method: 'POST',
      path: '/api/chat.postMessage',
      authorization: 'Bearer <token>',
      contentType: 'application/json; charset=utf-8',
      params: { channel: CHANNEL, text: 'Build #12 passed' },
      status: 200,
    });
    // The token travels only in the header.
    expect(sl.requests[0]?.params.token).toBeUndefined();
    expect(sl.messagesFor('#builds').map((m) => m.text)).toEqual(['Build #12 passed']);
  });

  it('escapes &, < and > so a reply cannot ping the channel or forge a link', async () => {
    const slack = adapter();
    const [part] = slack.render?.('a <!channel> & <@U0123> > b [docs](https://evil.example|x)') ?? [];
    await slack.send({ to: CHANNEL, text: part?.text ?? '' });
    expect(sl.messages[0]?.text).toBe(
      'a &lt;!channel&gt; &amp; &lt;@U0123&gt; &gt; b <https://evil.example%7Cx|docs>',
    );
    expect(slackEscape('plain *bold* _it_')).toBe('plain *bold* _it_');
  });

  it('sends exactly 40,000 characters, refuses more or nothing without calling Slack', async () => {
    await adapter().send({ to: CHANNEL, text: 'x'.repeat(40_000) });
    expect(sl.messages[0]?.text).toHaveLength(40_000);
    expect((await failure(adapter().send({ to: CHANNEL, text: 'x'.repeat(40_001) }))).permanent).toBe(true);
    expect((await failure(adapter().send({ to: CHANNEL, text: ' ' }))).message).toContain('empty');
    expect((await failure(adapter().send({ to: ' ', text: 'hi' }))).permanent).toBe(true);
    expect(sl.requests).toHaveLength(1);
  });
});

describe('slack adapter: failures', () => {
  it('maps HTTP 429 to a retryable error with retryAfterMs from Retry-After', async () => {
    sl.failNext(1, 'rate_limit', { retryAfter: 3 });
    const error = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
    expect(error).toMatchObject({
      permanent: false,
      retryAfterMs: 3000,
      message: 'slack: ratelimited (HTTP 429)',
    });
    await expect(adapter().send({ to: CHANNEL, text: 'hi' })).resolves.toEqual({
      messageId: expect.any(String),
    });
  });

  it('maps `ratelimited` in a 200 answer to retryable too', async () => {
    sl.failNext(1, 'ratelimited_200', { retryAfter: 2 });
    expect(await failure(adapter().send({ to: CHANNEL, text: 'hi' }))).toMatchObject({
      permanent: false,
      retryAfterMs: 2000,
    });
  });

  it('treats refused tokens as permanent, naming the setting but not the token', async () => {
    const wrong = 'xoxb-9999999999-8888888888-WrongSecret01234567';
    for (const [token, code] of [
      [wrong, 'invalid_auth'],
      [REVOKED, 'token_revoked'],
      [INACTIVE, 'account_inactive'],
      ['', 'not_authed'],
    ] as const) {
      const error = await failure(adapter(token).send({ to: CHANNEL, text: 'hi' }), token || TOKEN);
      expect(error.permanent).toBe(true);
      expect(error.message).toBe(`slack: ${code}: check channels.slack.botToken`);
    }
  });

  it('treats channel problems as permanent', async () => {
    for (const [to, code] of [
      ['C0NOSUCHONE', 'channel_not_found'],
      ['C0NOTMEMBER', 'not_in_channel'],
      ['C0ARCHIVED1', 'is_archived'],
    ] as const) {
      const error = await failure(adapter().send({ to, text: 'hi' }));
      expect(error.permanent).toBe(true);
      expect(error.message).toMatch(new RegExp(`^slack: ${code}: `));
    }
  });

  it('treats text problems and a missing scope as permanent', async () => {
    for (const code of ['msg_too_long', 'no_text']) {
      const error = await failure(adapter(TOKEN, slackError(code)).send({ to: CHANNEL, text: 'hi' }));
      expect(error.permanent).toBe(true);
      expect(error.message).toContain(code);
    }
    const scope = await failure(
      adapter(TOKEN, slackError('missing_scope', { needed: 'chat:write', provided: 'users:read' })).send({
        to: CHANNEL,
        text: 'hi',
      }),
    );
    expect(scope).toMatchObject({
      permanent: true,
      message: 'slack: missing_scope: the app needs the chat:write scope',
    });
  });

  it('treats internal_error, fatal_error, service_unavailable and 5xx as retryable', async () => {
    for (const kind of ['internal_error', 'fatal_error', 'service_unavailable', 'bad_gateway'] as const) {
      sl.failNext(1, kind);
      const error = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
      expect(error.permanent).toBe(false);
      expect(error.retryAfterMs).toBeUndefined();
    }
    sl.failNext(1, 'network');
    expect((await failure(adapter().send({ to: CHANNEL, text: 'hi' }))).permanent).toBe(false);
  });

  it('scrubs the token from whatever Slack answers', async () => {
    const echo = slackError(`invalid_auth for ${TOKEN}`);
    const error = await failure(adapter(TOKEN, echo).send({ to: CHANNEL, text: 'hi' }));
    expect(error.message).toContain('[redacted]');
    expect(error.permanent).toBe(true);
  });

  it('times out a request that gets no answer, and rethrows the caller’s abort as it is', async () => {
    const slow = createSlackAdapter(
      { botToken: TOKEN, apiBaseUrl: sl.url },
      { fetch: hanging, timeoutMs: 50 },
    );
    expect((await failure(slow.send({ to: CHANNEL, text: 'hi' }))).message).toContain('no answer within');

    const controller = new AbortController();
    const reason = new Error('shutting down');
    const sending = adapter(TOKEN, hanging).send({ to: CHANNEL, text: 'hi' }, controller.signal);
    controller.abort(reason);
    await expect(sending).rejects.toBe(reason);
  });
});

describe('slack fake: checks what the Web API checks', () => {
  const call = (method: string, body: string, headers: Record<string, string>) =>
    fetch(`${sl.url}/${method}`, { method: 'POST', headers, body }).then(async (response) => ({
      status: response.status,
      body: (await response.json()) as Record<string, unknown>,
    }));

  it('answers unknown methods, missing tokens and missing text like Slack (token as a form parameter too)', async () => {
    expect(await call('chat.nope', '{}', { 'content-type': 'application/json' })).toMatchObject({
      status: 404,
      body: { ok: false, error: 'unknown_method' },
    });
    expect((await call('chat.postMessage', '{}', { 'content-type': 'application/json' })).body).toEqual({
      ok: false,
      error: 'not_authed',
    });
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    expect((await call('chat.postMessage', `token=${TOKEN}&channel=${CHANNEL}`, form)).body.error).toBe(
      'no_text',
    );
    expect(sl.messages).toHaveLength(0);
  });

  it('warns about a missing charset and truncates past 40,000 characters', async () => {
    const { body } = await call(
      'chat.postMessage',
      JSON.stringify({ channel: 'builds', text: 'y'.repeat(40_010) }),
      {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
      },
    );
    expect(body).toMatchObject({
      ok: true,
      channel: CHANNEL,
      response_metadata: { warnings: ['missing_charset', 'message_truncated'] },
    });
    expect(sl.messages[0]?.text).toHaveLength(40_000);
  });
});
