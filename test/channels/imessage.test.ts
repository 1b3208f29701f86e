/**
 * The iMessage adapter against the loopback BlueBubbles fake: delivery, the request
 * it sends, and how each failure maps to a DeliveryError. BlueBubbles puts the
 * password in the URL, so every error is checked for it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChannelAdapters } from '../../src/channels/index.js';
import { createIMessageAdapter, IMESSAGE_TEXT_LIMIT } from '../../src/channels/platforms/imessage/index.js';
import { DeliveryError } from '../../src/channels/types.js';
import { type FakeBlueBubbles, startFakeBlueBubbles } from '../fakes/imessage.js';

const PASSWORD = 'bb-pa$$ word&secret=1';
const PHONE = '+15551230001';
const EMAIL = 'friend@example.com';
const GONE = '+15551230009';
let bb: FakeBlueBubbles;

beforeAll(async () => {
  bb = await startFakeBlueBubbles({ password: PASSWORD, handles: [PHONE, EMAIL], failing: [GONE] });
});
afterAll(async () => {
  await bb.close();
});
beforeEach(() => {
  bb.messages.length = 0;
  bb.requests.length = 0;
});

const adapter = (
  options: { password?: string; serverUrl?: string; timeoutMs?: number; fetch?: typeof fetch } = {},
) =>
  createIMessageAdapter(
    { serverUrl: options.serverUrl ?? bb.url, password: options.password ?? PASSWORD },
    { timeoutMs: options.timeoutMs, fetch: options.fetch },
  );

const hanging: typeof fetch = (_url, init) =>
  new Promise((_resolve, reject) =>
    init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
  );

/** The DeliveryError a send rejects with, checked never to hold the password in any form. */
async function failure(promise: Promise<unknown>, password = PASSWORD): Promise<DeliveryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  const message = (error as DeliveryError).message;
  expect(message).not.toContain(password);
  expect(message).not.toContain(encodeURIComponent(password));
  expect(message).not.toMatch(/password=(?!\[redacted\])/);
  return error as DeliveryError;
}

describe('imessage adapter: delivery', () => {
  it('sends {chatGuid, tempGuid, message, method} with the password as a query parameter', async () => {
    const result = await adapter().send({ to: PHONE, text: 'Build #12 passed' });
    expect(bb.requests[0]).toMatchObject({
      method: 'POST',
      path: '/api/v1/message/text',
      authParam: 'password',
      body: {
        chatGuid: `iMessage;-;${PHONE}`,
        tempGuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
        message: 'Build #12 passed',
        method: 'apple-script',
      },
      status: 200,
    });
    expect(result).toEqual({ messageId: bb.messages[0]?.guid });
    expect(bb.messagesFor(PHONE).map((m) => m.text)).toEqual(['Build #12 passed']);
  });

  it('addresses email handles too, with a fresh tempGuid per send', async () => {
    await adapter().send({ to: EMAIL, text: 'one' });
    await adapter().send({ to: EMAIL, text: 'two' });
    expect(bb.messagesFor(EMAIL).map((m) => m.text)).toEqual(['one', 'two']);
    expect(bb.messages[0]?.tempGuid).not.toBe(bb.messages[1]?.tempGuid);
  });

  it('declares 20000 characters and refuses longer or empty text without a request', async () => {
    expect(adapter().maxMessageLength).toBe(IMESSAGE_TEXT_LIMIT);
    expect((await failure(adapter().send({ to: PHONE, text: 'x'.repeat(20_001) }))).permanent).toBe(true);
    expect((await failure(adapter().send({ to: PHONE, text: ' ' }))).permanent).toBe(true);
    expect(bb.requests).toHaveLength(0);
  });
});

describe('imessage adapter: failures', () => {
  it('maps a 429 from the tunnel to a retryable error waiting Retry-After', async () => {
    bb.failNext(1, 'rate_limit', { retryAfter: 4 });
    const error = await failure(adapter().send({ to: PHONE, text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.retryAfterMs).toBe(4000);
    await expect(adapter().send({ to: PHONE, text: 'hi' })).resolves.toHaveProperty('messageId');
  });

  it('treats a wrong password as permanent, naming the setting but never the password', async () => {
    const wrong = 'not-the-password-42';
    const error = await failure(adapter({ password: wrong }).send({ to: PHONE, text: 'hi' }), wrong);
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('HTTP 401');
    expect(error.message).toContain('channels.imessage.password');
  });

  it('treats a chat Messages cannot find as permanent', async () => {
    const error = await failure(adapter().send({ to: '+15557770000', text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('Can’t get chat id');
    expect(error.message).toContain('no iMessage chat with this recipient');
  });

  it('treats a message Messages saved with an error as permanent', async () => {
    const error = await failure(adapter().send({ to: GONE, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('Messages reported error 22');
  });

  it('treats a wrong server path (404) and a validation error (400) as permanent', async () => {
    const missing = await failure(
      adapter({ serverUrl: `${bb.url}/bluebubbles` }).send({ to: PHONE, text: 'hi' }),
    );
    expect(missing.permanent).toBe(true);
    expect(missing.message).toContain('HTTP 404');
    const invalid: typeof fetch = async () =>
      new Response(
        JSON.stringify({
          status: 400,
          message: "You've made a bad request! Please check your request params & body",
          error: { type: 'Validation Error', message: 'The chatGuid field is required.' },
        }),
        { status: 400 },
      );
    const error = await failure(adapter({ fetch: invalid }).send({ to: PHONE, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('The chatGuid field is required.');
  });

  it('treats other 5xx answers as retryable', async () => {
    bb.failNext(1, 'server_error');
    expect((await failure(adapter().send({ to: PHONE, text: 'hi' }))).permanent).toBe(false);
    bb.failNext(1, 'imessage_error');
    const timedOut = await failure(adapter().send({ to: PHONE, text: 'hi' }));
    expect(timedOut.permanent).toBe(false);
    expect(timedOut.message).toContain('AppleEvent timed out');
  });

  it('treats a dropped connection, a refused one and a timeout as retryable, without the URL', async () => {
    bb.failNext(1, 'network');
    expect((await failure(adapter().send({ to: PHONE, text: 'hi' }))).permanent).toBe(false);

    const closed = await startFakeBlueBubbles({ password: PASSWORD });
    const url = closed.url;
    await closed.close();
    const refused = await failure(adapter({ serverUrl: url }).send({ to: PHONE, text: 'hi' }));
    expect(refused.message).toBe('imessage: request failed (ECONNREFUSED)');

    const leaky: typeof fetch = async (input) => {
      throw new TypeError(`fetch failed for ${String(input)}`, { cause: new Error(String(input)) });
    };
    expect((await failure(adapter({ fetch: leaky }).send({ to: PHONE, text: 'hi' }))).message).toBe(
      'imessage: request failed (network error)',
    );

    const slow = await failure(adapter({ fetch: hanging, timeoutMs: 50 }).send({ to: PHONE, text: 'hi' }));
    expect(slow.permanent).toBe(false);
    expect(slow.message).toContain('no answer within');
  });

  it("rethrows the caller's abort as it is", async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const sending = adapter({ fetch: hanging }).send({ to: PHONE, text: 'hi' }, controller.signal);
    controller.abort(reason);
    await expect(sending).rejects.toBe(reason);
  });

  it('scrubs the password, raw and URL-encoded, from whatever the server echoes back', async () => {
    const echo: typeof fetch = async (input) =>
      new Response(
        JSON.stringify({
          status: 500,
          // As URLSearchParams would write it: spaces as '+', which encodeURIComponent does not produce.
          message: `Error at ${String(input).split('?')[0]}?${new URLSearchParams({ password: PASSWORD })}`,
          error: { type: 'Server Error', message: `bad password ${PASSWORD}` },
        }),
        { status: 500 },
      );
    const error = await failure(adapter({ fetch: echo }).send({ to: PHONE, text: 'hi' }));
    expect(error.message).toContain('[redacted]');
    expect(error.permanent).toBe(false);
  });
});

describe('createChannelAdapters', () => {
  it('creates the imessage adapter from its config block', async () => {
    const adapters = createChannelAdapters({ imessage: { serverUrl: bb.url, password: PASSWORD } });
    expect([...adapters.keys()]).toEqual(['imessage']);
    await adapters.get('imessage')?.send({ to: PHONE, text: 'via the registry' });
    expect(bb.messages.map((m) => m.text)).toEqual(['via the registry']);
  });
});
