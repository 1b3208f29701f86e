/**
 * The Discord adapter against the loopback REST fake: delivery, the request's
 * shape (no pings), and how each failure maps to a DeliveryError (without the token).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDiscordAdapter, discordChannelId } from '../../src/channels/platforms/discord/index.js';
import { DeliveryError } from '../../src/channels/types.js';
import { type FakeDiscord, startFakeDiscord } from '../fakes/discord.js';

const TOKEN = 'MTE5ODc2NTQzMjEwOTg3NjU0Mw.GfAkE1.secret-part-0123456789abcdefghijkl';
const CHANNEL = '1198765432109876543';
const HIDDEN = '1198765432109876544';
const READ_ONLY = '1198765432109876545';

let dc: FakeDiscord;

beforeAll(async () => {
  dc = await startFakeDiscord({
    token: TOKEN,
    channels: [CHANNEL, { id: HIDDEN, access: false }, { id: READ_ONLY, canSend: false }],
  });
});
afterAll(async () => {
  await dc.close();
});
beforeEach(() => {
  dc.messages.length = 0;
  dc.requests.length = 0;
});

const adapter = (botToken = TOKEN, fetchImpl?: typeof fetch) =>
  createDiscordAdapter({ botToken, apiBaseUrl: dc.url }, fetchImpl ? { fetch: fetchImpl } : {});

async function failure(promise: Promise<unknown>, secret = TOKEN): Promise<DeliveryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  expect((error as DeliveryError).message).not.toContain(secret);
  return error as DeliveryError;
}

const hanging: typeof fetch = (_url, init) =>
  new Promise((_resolve, reject) =>
    init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
  );

describe('discord adapter: delivery', () => {
  it('posts {content, allowed_mentions} to /channels/{id}/messages and returns the message id', async () => {
    const discord = adapter();
    expect(discord.id).toBe('discord');
    expect(discord.maxMessageLength).toBe(2000);
    const text = 'Deploy done @everyone <@&123> <@456>';
    const result = await discord.send({ to: CHANNEL, text });
    expect(result).toEqual({ messageId: dc.messages[0]?.id });
    expect(dc.requests[0]).toMatchObject({
      method: 'POST',
      path: `/api/v10/channels/${CHANNEL}/messages`,
      authorization: 'Bot <token>',
      contentType: 'application/json',
      status: 200,
    });
    expect(dc.requests[0]?.userAgent).toMatch(/^DiscordBot \(/);
    // Nothing in the text may ping: no parsed mentions of any kind.
    expect(dc.requests[0]?.payload).toEqual({ content: text, allowed_mentions: { parse: [] } });
    expect(dc.messagesFor(CHANNEL).map((m) => m.content)).toEqual([text]);
  });

  it('sends exactly 2000 characters, and refuses more, or nothing, without calling Discord', async () => {
    await adapter().send({ to: CHANNEL, text: 'x'.repeat(2000) });
    expect(dc.messages).toHaveLength(1);
    expect((await failure(adapter().send({ to: CHANNEL, text: 'x'.repeat(2001) }))).permanent).toBe(true);
    expect((await failure(adapter().send({ to: CHANNEL, text: '   ' }))).permanent).toBe(true);
    expect(dc.requests).toHaveLength(1);
  });

  it('accepts only snowflake channel ids', async () => {
    expect(discordChannelId(` ${CHANNEL} `)).toBe(CHANNEL);
    const error = await failure(adapter().send({ to: '../users/@me', text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(dc.requests).toHaveLength(0);
  });
});

describe('discord adapter: failures', () => {
  it('maps 429 to a retryable error with retryAfterMs from the body’s fractional retry_after', async () => {
    dc.failNext(1, 'rate_limit', { retryAfter: 1.234 });
    const error = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
    expect(error).toMatchObject({ permanent: false, retryAfterMs: 1234 });
    expect(error.message).toContain('rate limited');
    await expect(adapter().send({ to: CHANNEL, text: 'hi' })).resolves.toEqual({
      messageId: expect.any(String),
    });

    dc.failNext(1, 'global_rate_limit', { retryAfter: 2 });
    const global = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
    expect(global.retryAfterMs).toBe(2000);
    expect(global.message).toContain('(global)');
  });

  it('falls back to the Retry-After header when the body has none (a Cloudflare 429)', async () => {
    const limited: typeof fetch = async () =>
      new Response('error code: 1015', { status: 429, headers: { 'retry-after': '5' } });
    expect((await failure(adapter(TOKEN, limited).send({ to: CHANNEL, text: 'hi' }))).retryAfterMs).toBe(
      5000,
    );
  });

  it('treats a refused token as permanent, naming the setting but not the token', async () => {
    const wrong = 'MTIzNDU2Nzg5.wrong.token-abcdefghijklmnop';
    const error = await failure(adapter(wrong).send({ to: CHANNEL, text: 'hi' }), wrong);
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('401: Unauthorized');
    expect(error.message).toContain('channels.discord.botToken');
  });

  it('treats Unknown Channel (404), Missing Access and Missing Permissions (403) as permanent', async () => {
    const unknown = await failure(adapter().send({ to: '1198765432109870000', text: 'hi' }));
    expect(unknown).toMatchObject({ permanent: true, message: 'discord: Unknown Channel (error 10003)' });
    const hidden = await failure(adapter().send({ to: HIDDEN, text: 'hi' }));
    expect(hidden).toMatchObject({ permanent: true, message: 'discord: Missing Access (error 50001)' });
    const readOnly = await failure(adapter().send({ to: READ_ONLY, text: 'hi' }));
    expect(readOnly).toMatchObject({
      permanent: true,
      message: 'discord: Missing Permissions (error 50013)',
    });
  });

  it('names the field of an Invalid Form Body', async () => {
    const invalid: typeof fetch = async () =>
      Response.json(
        {
          message: 'Invalid Form Body',
          code: 50035,
          errors: {
            content: {
              _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }],
            },
          },
        },
        { status: 400 },
      );
    const error = await failure(adapter(TOKEN, invalid).send({ to: CHANNEL, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toBe(
      'discord: Invalid Form Body (content: Must be 2000 or fewer in length.) (error 50035)',
    );
  });

  it('treats 5xx answers, JSON or not, and dropped connections as retryable', async () => {
    dc.failNext(1, 'server_error');
    const server = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
    expect(server).toMatchObject({ permanent: false, message: 'discord: 500: Internal Server Error' });
    dc.failNext(1, 'bad_gateway');
    const gateway = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
    expect(gateway).toMatchObject({ permanent: false, message: 'discord: unexpected answer (HTTP 502)' });
    dc.failNext(1, 'network');
    expect((await failure(adapter().send({ to: CHANNEL, text: 'hi' }))).permanent).toBe(false);
  });

  it('keeps the token out of network errors that quote the request', async () => {
    const leaky: typeof fetch = async (_url, init) => {
      throw new TypeError(`fetch failed with ${JSON.stringify(init?.headers)}`);
    };
    const error = await failure(adapter(TOKEN, leaky).send({ to: CHANNEL, text: 'hi' }));
    expect(error.message).toBe('discord: request failed (network error)');
  });

  it('times out a request that gets no answer, and rethrows the caller’s abort as it is', async () => {
    const slow = createDiscordAdapter(
      { botToken: TOKEN, apiBaseUrl: dc.url },
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

describe('discord fake: checks what the REST API checks', () => {
  const post = (channel: string, body: unknown, authorization = `Bot ${TOKEN}`) =>
    fetch(`${dc.url}/channels/${channel}/messages`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const answer = async (response: Response) => [response.status, await response.json()] as const;

  it('refuses a missing token, empty or long content, and a non-snowflake id', async () => {
    expect(await answer(await post(CHANNEL, { content: 'hi' }, ''))).toEqual([
      401,
      { message: '401: Unauthorized', code: 0 },
    ]);
    expect(await answer(await post(CHANNEL, { content: '' }))).toEqual([
      400,
      { message: 'Cannot send an empty message', code: 50006 },
    ]);
    const [status, long] = await answer(await post(CHANNEL, { content: 'x'.repeat(2001) }));
    expect(status).toBe(400);
    expect(long).toMatchObject({
      code: 50035,
      errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH' }] } },
    });
    expect((await answer(await post('general', { content: 'hi' })))[1]).toMatchObject({ code: 50035 });
    expect((await fetch(`${dc.url}/channels/${CHANNEL}/messages`)).status).toBe(405);
    expect(dc.messages).toHaveLength(0);
  });

  it('sends Retry-After and X-RateLimit-Scope with a 429', async () => {
    dc.failNext(1, 'rate_limit', { retryAfter: 0.3 });
    const response = await post(CHANNEL, { content: 'hi' });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(response.headers.get('x-ratelimit-scope')).toBe('user');
    expect(await response.json()).toEqual({
      message: 'You are being rate limited.',
      retry_after: 0.3,
      global: false,
    });
  });
});
