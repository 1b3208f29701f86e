/**
 * The Telegram adapter against the loopback Bot API fake: delivery, chat ids,
 * one message within the limit, and how each failure maps to a DeliveryError (without the token).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChannelAdapters } from '../../src/channels/index.js';
import { createTelegramAdapter, telegramChatId } from '../../src/channels/platforms/telegram/index.js';
import { DeliveryError } from '../../src/channels/types.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';

const TOKEN = '123456789:AAHk-secret-part-0123456789abcdefXYZ';
const SECRET_HALF = TOKEN.slice(TOKEN.indexOf(':') + 1);
const USER = 4242;
const SUPERGROUP = -1001234567890;

let tg: FakeTelegram;

beforeAll(async () => {
  tg = await startFakeTelegram({
    token: TOKEN,
    chats: [USER, SUPERGROUP, '@agentgate_news', { id: 777, blocked: true }],
  });
});
afterAll(async () => {
  await tg.close();
});
beforeEach(() => {
  tg.messages.length = 0;
  tg.requests.length = 0;
});

const adapter = (options: { botToken?: string; timeoutMs?: number; fetch?: typeof fetch } = {}) =>
  createTelegramAdapter({ botToken: TOKEN, apiBaseUrl: tg.url, ...options });

/** The DeliveryError a send rejects with; fails the test when it resolves or throws something else. */
async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  const delivery = error as DeliveryError;
  expect(delivery.message).not.toContain(TOKEN);
  expect(delivery.message).not.toContain(SECRET_HALF);
  return delivery;
}

describe('telegram adapter: delivery', () => {
  it('posts JSON {chat_id, text} to /bot<token>/sendMessage and returns the message id', async () => {
    const result = await adapter().send({ to: String(USER), text: 'Build #12 passed' });
    expect(result).toEqual({ messageId: '1' });
    expect(tg.requests).toHaveLength(1);
    expect(tg.requests[0]).toMatchObject({
      method: 'POST',
      path: '/bot<token>/sendMessage',
      contentType: 'application/json',
      params: { chat_id: USER, text: 'Build #12 passed' },
      status: 200,
    });
    expect(tg.messagesFor(USER).map((m) => m.text)).toEqual(['Build #12 passed']);
  });

  it('counts message ids per chat', async () => {
    const before = tg.messagesFor(USER).length;
    const { messageId } = await adapter().send({ to: String(USER), text: 'again' });
    expect(messageId).toBe(String(tg.messagesFor(USER)[before]?.messageId));
  });

  it('sends numeric ids as numbers and @names as strings', async () => {
    await adapter().send({ to: String(SUPERGROUP), text: 'to the group' });
    await adapter().send({ to: ' 4242 ', text: 'trimmed' });
    await adapter().send({ to: '@agentgate_news', text: 'to the channel' });
    expect(tg.messages.map((m) => m.sentChatId)).toEqual([SUPERGROUP, USER, '@agentgate_news']);
    expect(tg.messagesFor('@agentgate_news').map((m) => m.text)).toEqual(['to the channel']);
  });

  it('parses chat ids', () => {
    expect(telegramChatId('12345')).toBe(12345);
    expect(telegramChatId('-1001234567890')).toBe(-1001234567890);
    expect(telegramChatId('@channel')).toBe('@channel');
    // Beyond a double's exact range: passed on as the string Telegram also accepts.
    expect(telegramChatId('123456789012345678901')).toBe('123456789012345678901');
    expect(() => telegramChatId('  ')).toThrow(DeliveryError);
  });

  it('sends text of exactly 4096 characters as one message, and refuses longer without calling Telegram', async () => {
    await adapter().send({ to: String(USER), text: 'x'.repeat(4096) });
    expect(tg.messages).toHaveLength(1);
    // The delivery engine splits replies (split.ts); the adapter sends one message.
    const error = await failure(adapter().send({ to: String(USER), text: 'x'.repeat(4097) }));
    expect(error.permanent).toBe(true);
    expect(error.message).toBe('telegram: message text is 4097 characters; the limit is 4096');
    expect(tg.requests).toHaveLength(1);
  });

  it('refuses empty text without calling Telegram', async () => {
    const error = await failure(adapter().send({ to: String(USER), text: ' \n ' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('empty');
    expect(tg.requests).toHaveLength(0);
  });
});

describe('telegram adapter: failures', () => {
  it('maps 429 to a retryable error with retryAfterMs from parameters.retry_after', async () => {
    tg.failNext(1, 'rate_limit', { retryAfter: 3 });
    const error = await failure(adapter().send({ to: String(USER), text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.retryAfterMs).toBe(3000);
    expect(error.message).toContain('Too Many Requests');
    await expect(adapter().send({ to: String(USER), text: 'hi' })).resolves.toEqual({
      messageId: expect.any(String),
    });
  });

  it('treats an unknown chat as permanent', async () => {
    const error = await failure(adapter().send({ to: '999', text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('chat not found');
  });

  it('treats a refused token as permanent, naming the setting but not the token', async () => {
    const wrong = '987654321:AAwrong-token-abcdefghijklmnop';
    const error = await failure(adapter({ botToken: wrong }).send({ to: String(USER), text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('Unauthorized');
    expect(error.message).toContain('channels.telegram.botToken');
    expect(error.message).not.toContain(wrong);
    expect(error.message).not.toContain(wrong.slice(wrong.indexOf(':') + 1));
  });

  it('treats a bot blocked by the user as permanent', async () => {
    const error = await failure(adapter().send({ to: '777', text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('bot was blocked by the user');
    tg.failNext(1, 'blocked');
    expect((await failure(adapter().send({ to: String(USER), text: 'hi' }))).permanent).toBe(true);
  });

  it('treats 5xx answers as retryable, JSON or not', async () => {
    tg.failNext(1, 'server_error');
    const error = await failure(adapter().send({ to: String(USER), text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.retryAfterMs).toBeUndefined();
    tg.failNext(1, 'bad_gateway');
    const gateway = await failure(adapter().send({ to: String(USER), text: 'hi' }));
    expect(gateway.permanent).toBe(false);
    expect(gateway.message).toContain('unexpected answer (HTTP 502)');
  });

  it('treats a dropped connection and a refused one as retryable', async () => {
    tg.failNext(1, 'network');
    expect((await failure(adapter().send({ to: String(USER), text: 'hi' }))).permanent).toBe(false);

    const closed = await startFakeTelegram({ token: TOKEN, chats: [USER] });
    const url = closed.url;
    await closed.close();
    const refused = await failure(
      createTelegramAdapter({ botToken: TOKEN, apiBaseUrl: url }).send({ to: String(USER), text: 'hi' }),
    );
    expect(refused.permanent).toBe(false);
    expect(refused.message).toMatch(/^telegram: request failed \(ECONNREFUSED\)$/);
  });

  it('times out a request that gets no answer', async () => {
    const hanging: typeof fetch = (_url, init) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      );
    const error = await failure(
      adapter({ fetch: hanging, timeoutMs: 50 }).send({ to: String(USER), text: 'hi' }),
    );
    expect(error.permanent).toBe(false);
    expect(error.message).toContain('no answer within');
  });

  it("rethrows the caller's abort as it is", async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const hanging: typeof fetch = (_url, init) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      );
    const sending = adapter({ fetch: hanging }).send({ to: String(USER), text: 'hi' }, controller.signal);
    controller.abort(reason);
    await expect(sending).rejects.toBe(reason);
  });

  it('scrubs the token from whatever the API answers', async () => {
    const echo: typeof fetch = async (url) =>
      new Response(
        JSON.stringify({
          ok: false,
          error_code: 400,
          description: `Bad Request: no such route ${String(url)}`,
        }),
        { status: 400, headers: { 'content-type': 'application/json' } },
      );
    const error = await failure(adapter({ fetch: echo }).send({ to: String(USER), text: 'hi' }));
    expect(error.message).toContain('[redacted]');
    expect(error.permanent).toBe(true);
  });

  it('keeps the token out of network error messages even when the cause quotes the URL', async () => {
    const leaky: typeof fetch = async (url) => {
      throw new TypeError(`fetch failed for ${String(url)}`, {
        cause: new Error(`connect to ${String(url)}`),
      });
    };
    const error = await failure(adapter({ fetch: leaky }).send({ to: String(USER), text: 'hi' }));
    expect(error.message).toBe('telegram: request failed (network error)');
  });

  it('falls back to the Retry-After header when the body has no retry_after', async () => {
    const limited: typeof fetch = async () =>
      new Response('{"ok":false,"error_code":429,"description":"Too Many Requests"}', {
        status: 429,
        headers: { 'retry-after': '7' },
      });
    expect(
      (await failure(adapter({ fetch: limited }).send({ to: String(USER), text: 'hi' }))).retryAfterMs,
    ).toBe(7000);
  });

  it('names the new chat id when a group was upgraded to a supergroup', async () => {
    const migrated: typeof fetch = async () =>
      new Response(
        JSON.stringify({
          ok: false,
          error_code: 400,
          description: 'Bad Request: group chat was upgraded to a supergroup chat',
          parameters: { migrate_to_chat_id: -1009876543210 },
        }),
        { status: 400 },
      );
    const error = await failure(adapter({ fetch: migrated }).send({ to: '-12345', text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('-1009876543210');
  });
});

describe('createChannelAdapters', () => {
  it('creates the telegram adapter when telegram is configured', async () => {
    const adapters = createChannelAdapters({ telegram: { botToken: TOKEN, apiBaseUrl: tg.url } });
    expect([...adapters.keys()]).toEqual(['telegram']);
    const telegram = adapters.get('telegram');
    expect(telegram?.id).toBe('telegram');
    await telegram?.send({ to: String(USER), text: 'via the registry' });
    expect(tg.messages.map((m) => m.text)).toEqual(['via the registry']);
  });

  it('creates nothing for an empty config, and one adapter per configured platform', () => {
    expect(createChannelAdapters({}).size).toBe(0);
    const adapters = createChannelAdapters({
      slack: { botToken: 'xoxb-1', apiBaseUrl: 'http://127.0.0.1:1' },
      telegram: { botToken: '1:x', apiBaseUrl: 'http://127.0.0.1:1' },
    });
    expect([...adapters.keys()].sort()).toEqual(['slack', 'telegram']);
  });
});
