/**
 * The WhatsApp adapter against the loopback Cloud API fake: delivery, the
 * request's shape, and how each failure maps to a DeliveryError (without the token).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createWhatsAppAdapter, whatsappRecipient } from '../../src/channels/platforms/whatsapp/index.js';
import { DeliveryError } from '../../src/channels/types.js';
import { type FakeWhatsApp, startFakeWhatsApp } from '../fakes/whatsapp.js';

const TOKEN = 'EAAGm0PX4ZCpsBAFake-secret-access-token-0123456789';
const PHONE_NUMBER_ID = '106540352242922';
const USER = '15551234567';
const GONE = '15559990000';

let wa: FakeWhatsApp;

beforeAll(async () => {
  wa = await startFakeWhatsApp({
    token: TOKEN,
    phoneNumberId: PHONE_NUMBER_ID,
    recipients: [USER, GONE],
    undeliverable: [GONE],
  });
});
afterAll(async () => {
  await wa.close();
});
beforeEach(() => {
  wa.messages.length = 0;
  wa.requests.length = 0;
});

const adapter = (
  overrides: { accessToken?: string; phoneNumberId?: string } = {},
  fetchImpl?: typeof fetch,
) =>
  createWhatsAppAdapter(
    { phoneNumberId: PHONE_NUMBER_ID, accessToken: TOKEN, apiBaseUrl: wa.url, ...overrides },
    fetchImpl ? { fetch: fetchImpl } : {},
  );

/** The DeliveryError a send rejects with; fails the test when it resolves, or leaks the token. */
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

describe('whatsapp adapter: delivery', () => {
  it('posts a text message to /{phoneNumberId}/messages and returns the wamid', async () => {
    const whatsapp = adapter();
    expect(whatsapp.id).toBe('whatsapp');
    expect(whatsapp.maxMessageLength).toBe(4096);
    const result = await whatsapp.send({ to: '+1 (555) 123-4567', text: 'Build #12 passed' });
    expect(result).toEqual({ messageId: wa.messages[0]?.id });
    expect(result.messageId).toMatch(/^wamid\./);
    expect(wa.requests[0]).toMatchObject({
      method: 'POST',
      path: `/v21.0/${PHONE_NUMBER_ID}/messages`,
      authorization: 'Bearer <token>',
      contentType: 'application/json',
      status: 200,
    });
    expect(wa.requests[0]?.payload).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: USER,
      type: 'text',
      text: { preview_url: false, body: 'Build #12 passed' },
    });
    expect(wa.messagesFor(USER).map((m) => m.body)).toEqual(['Build #12 passed']);
  });

  it('sends text of exactly 4096 characters', async () => {
    await adapter().send({ to: USER, text: 'x'.repeat(4096) });
    expect(wa.messages[0]?.body).toHaveLength(4096);
  });

  it('refuses longer or empty text, and a non-number recipient, without calling the API', async () => {
    expect((await failure(adapter().send({ to: USER, text: 'x'.repeat(4097) }))).permanent).toBe(true);
    expect((await failure(adapter().send({ to: USER, text: ' \n ' }))).message).toContain('empty');
    expect((await failure(adapter().send({ to: 'alice', text: 'hi' }))).message).toContain('E.164');
    expect(wa.requests).toHaveLength(0);
  });

  it('normalizes recipients to E.164 digits', () => {
    expect(whatsappRecipient('+44 20 7946 0958')).toBe('442079460958');
    expect(whatsappRecipient('15551234567')).toBe('15551234567');
    expect(() => whatsappRecipient('+0123456')).toThrow(DeliveryError);
    expect(() => whatsappRecipient('+1234567890123456')).toThrow(DeliveryError);
  });
});

describe('whatsapp adapter: failures', () => {
  it('maps a throughput rate limit (HTTP 400, code 130429) to retryable with a delay', async () => {
    wa.failNext(1, 'rate_limit');
    const error = await failure(adapter().send({ to: USER, text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.retryAfterMs).toBe(1000);
    expect(error.message).toContain('error 130429');
    await expect(adapter().send({ to: USER, text: 'hi' })).resolves.toEqual({
      messageId: expect.any(String),
    });
  });

  it('waits 6 s after a pair rate limit (131056), and obeys Retry-After on HTTP 429', async () => {
    wa.failNext(1, 'pair_rate_limit');
    expect((await failure(adapter().send({ to: USER, text: 'hi' }))).retryAfterMs).toBe(6000);
    wa.failNext(1, 'too_many_calls', { retryAfter: 12 });
    const limited = await failure(adapter().send({ to: USER, text: 'hi' }));
    expect(limited).toMatchObject({ permanent: false, retryAfterMs: 12_000 });
    wa.failNext(1, 'too_many_calls');
    expect((await failure(adapter().send({ to: USER, text: 'hi' }))).retryAfterMs).toBe(60_000);
  });

  it('treats a refused token as permanent, naming the setting but not the token', async () => {
    const wrong = 'EAAGwrong-token-0123456789abcdef';
    const error = await failure(adapter({ accessToken: wrong }).send({ to: USER, text: 'hi' }), wrong);
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('error 190');
    expect(error.message).toContain('channels.whatsapp.accessToken');
    wa.failNext(1, 'expired_token');
    expect((await failure(adapter().send({ to: USER, text: 'hi' }))).permanent).toBe(true);
  });

  it('treats an unknown or undeliverable recipient as permanent', async () => {
    const unknown = await failure(adapter().send({ to: '+15550001111', text: 'hi' }));
    expect(unknown.permanent).toBe(true);
    expect(unknown.message).toContain('not in allowed list');
    expect(unknown.message).toContain('error 131030');
    const gone = await failure(adapter().send({ to: GONE, text: 'hi' }));
    expect(gone.permanent).toBe(true);
    expect(gone.message).toContain('error 131026');
  });

  it('treats an invalid parameter (code 100) as permanent, and names a wrong phone number id', async () => {
    const invalid: typeof fetch = async () =>
      Response.json(
        {
          error: { message: '(#100) Invalid parameter', type: 'OAuthException', code: 100, fbtrace_id: 'A' },
        },
        { status: 400 },
      );
    const error = await failure(adapter({}, invalid).send({ to: USER, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('recipient');
    const wrongId = await failure(adapter({ phoneNumberId: '999' }).send({ to: USER, text: 'hi' }));
    expect(wrongId.permanent).toBe(true);
    expect(wrongId.message).toContain('channels.whatsapp.phoneNumberId');
  });

  it('treats 5xx answers, JSON or not, as retryable', async () => {
    for (const kind of ['server_error', 'unavailable', 'bad_gateway'] as const) {
      wa.failNext(1, kind);
      const error = await failure(adapter().send({ to: USER, text: 'hi' }));
      expect(error.permanent).toBe(false);
      expect(error.retryAfterMs).toBeUndefined();
    }
  });

  it('treats dropped and refused connections as retryable', async () => {
    wa.failNext(1, 'network');
    expect((await failure(adapter().send({ to: USER, text: 'hi' }))).permanent).toBe(false);
    const closed = await startFakeWhatsApp({ token: TOKEN, phoneNumberId: PHONE_NUMBER_ID });
    const url = closed.url;
    await closed.close();
    const refused = await failure(
      createWhatsAppAdapter({ phoneNumberId: PHONE_NUMBER_ID, accessToken: TOKEN, apiBaseUrl: url }).send({
        to: USER,
        text: 'hi',
      }),
    );
    expect(refused.message).toBe('whatsapp: request failed (ECONNREFUSED)');
  });

  it('scrubs the token that Graph echoes back in a malformed-token error', async () => {
    const echo: typeof fetch = async () =>
      Response.json(
        { error: { message: `Malformed access token ${TOKEN}`, type: 'OAuthException', code: 190 } },
        { status: 401 },
      );
    const error = await failure(adapter({}, echo).send({ to: USER, text: 'hi' }));
    expect(error.message).toContain('[redacted]');
  });

  it('times out a request that gets no answer, and rethrows the caller’s abort as it is', async () => {
    const slow = createWhatsAppAdapter(
      { phoneNumberId: PHONE_NUMBER_ID, accessToken: TOKEN, apiBaseUrl: wa.url },
      { fetch: hanging, timeoutMs: 50 },
    );
    expect((await failure(slow.send({ to: USER, text: 'hi' }))).message).toContain('no answer within');

    const controller = new AbortController();
    const reason = new Error('shutting down');
    const sending = adapter({}, hanging).send({ to: USER, text: 'hi' }, controller.signal);
    controller.abort(reason);
    await expect(sending).rejects.toBe(reason);
  });
});

describe('whatsapp fake: checks what the Cloud API checks', () => {
  const post = (body: unknown, init: { token?: string; path?: string; method?: string } = {}) =>
    fetch(`${wa.url.replace(/\/v21\.0$/, '')}${init.path ?? `/v21.0/${PHONE_NUMBER_ID}/messages`}`, {
      method: init.method ?? 'POST',
      headers: { authorization: `Bearer ${init.token ?? TOKEN}`, 'content-type': 'application/json' },
      ...(init.method === 'GET' ? {} : { body: JSON.stringify(body) }),
    });
  const code = async (response: Response) =>
    [response.status, ((await response.json()) as { error: { code: number } }).error.code] as const;
  const valid = { messaging_product: 'whatsapp', to: USER, type: 'text', text: { body: 'hi' } };

  it('refuses missing fields, long text, other methods and paths with Graph errors', async () => {
    expect(await code(await post({ ...valid, messaging_product: undefined }))).toEqual([400, 100]);
    expect(await code(await post({ ...valid, to: undefined }))).toEqual([400, 100]);
    expect(await code(await post({ ...valid, text: {} }))).toEqual([400, 131008]);
    expect(await code(await post({ ...valid, text: { body: 'x'.repeat(4097) } }))).toEqual([400, 100]);
    expect(await code(await post(valid, { method: 'GET' }))).toEqual([400, 100]);
    expect(await code(await post(valid, { path: '/v21.0/nope' }))).toEqual([400, 2500]);
    expect(await code(await post(valid, { token: 'other' }))).toEqual([401, 190]);
    expect(wa.messages).toHaveLength(0);
  });

  it('answers contacts and the message id, and matches recipients by digits', async () => {
    const response = await post({ ...valid, to: '+1 555 123 4567' });
    expect(await response.json()).toEqual({
      messaging_product: 'whatsapp',
      contacts: [{ input: '+1 555 123 4567', wa_id: USER }],
      messages: [{ id: wa.messages[0]?.id }],
    });
  });
});
