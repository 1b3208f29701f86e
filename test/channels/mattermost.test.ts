/**
 * The Mattermost adapter against the loopback REST API fake: delivery, the request
 * it sends, and how each failure maps to a DeliveryError (never with the token).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChannelAdapters } from '../../src/channels/index.js';
import {
  createMattermostAdapter,
  MATTERMOST_TEXT_LIMIT,
} from '../../src/channels/platforms/mattermost/index.js';
import { DeliveryError } from '../../src/channels/types.js';
import { type FakeMattermost, mattermostId, startFakeMattermost } from '../fakes/mattermost.js';

const TOKEN = 'xq7mattermost-bot-token-secret9';
const CHANNEL = mattermostId();
let mm: FakeMattermost;

beforeAll(async () => {
  mm = await startFakeMattermost({ token: TOKEN, channels: [CHANNEL] });
});
afterAll(async () => {
  await mm.close();
});
beforeEach(() => {
  mm.posts.length = 0;
  mm.requests.length = 0;
});

const adapter = (
  options: { token?: string; baseUrl?: string; timeoutMs?: number; fetch?: typeof fetch } = {},
) =>
  createMattermostAdapter(
    { baseUrl: options.baseUrl ?? mm.url, token: options.token ?? TOKEN },
    { timeoutMs: options.timeoutMs, fetch: options.fetch },
  );

const hanging: typeof fetch = (_url, init) =>
  new Promise((_resolve, reject) =>
    init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
  );

/** The DeliveryError a send rejects with, checked never to hold the token. */
async function failure(promise: Promise<unknown>, token = TOKEN): Promise<DeliveryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  expect((error as DeliveryError).message).not.toContain(token);
  return error as DeliveryError;
}

const answer =
  (status: number, body: string, headers: Record<string, string> = {}): typeof fetch =>
  async () =>
    new Response(body, { status, headers });

describe('mattermost adapter: delivery', () => {
  it('posts {channel_id, message} with a bearer token and returns the post id', async () => {
    const result = await adapter().send({ to: CHANNEL, text: 'Build #12 passed' });
    expect(result).toEqual({ messageId: mm.posts[0]?.id });
    expect(mm.requests[0]).toMatchObject({
      method: 'POST',
      path: '/api/v4/posts',
      authScheme: 'Bearer',
      contentType: 'application/json',
      body: { channel_id: CHANNEL, message: 'Build #12 passed' },
      status: 201,
    });
    expect(mm.postsFor(CHANNEL).map((post) => post.message)).toEqual(['Build #12 passed']);
  });

  it('joins a base URL with a trailing slash and trims the channel id', async () => {
    await adapter({ baseUrl: `${mm.url}/` }).send({ to: ` ${CHANNEL} `, text: 'hi' });
    expect(mm.requests[0]?.path).toBe('/api/v4/posts');
    expect(mm.posts).toHaveLength(1);
  });

  it('declares the server limit and refuses longer or empty text without a request', async () => {
    expect(adapter().maxMessageLength).toBe(16_383);
    await adapter().send({ to: CHANNEL, text: 'x'.repeat(MATTERMOST_TEXT_LIMIT) });
    expect((await failure(adapter().send({ to: CHANNEL, text: 'x'.repeat(16_384) }))).permanent).toBe(true);
    expect((await failure(adapter().send({ to: CHANNEL, text: '  ' }))).permanent).toBe(true);
    expect((await failure(adapter().send({ to: ' ', text: 'hi' }))).permanent).toBe(true);
    expect(mm.requests).toHaveLength(1);
  });
});

describe('mattermost adapter: failures', () => {
  it('maps 429 to a retryable error that waits Retry-After', async () => {
    mm.failNext(1, 'rate_limit', { retryAfter: 3 });
    const error = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.retryAfterMs).toBe(3000);
    expect(error.message).toContain('limit exceeded');
    await expect(adapter().send({ to: CHANNEL, text: 'hi' })).resolves.toHaveProperty('messageId');
  });

  it('reads X-RateLimit-Reset as seconds to wait, or as a Unix time from a proxy', async () => {
    const delta = answer(429, 'limit exceeded', { 'x-ratelimit-reset': '7' });
    expect((await failure(adapter({ fetch: delta }).send({ to: CHANNEL, text: 'hi' }))).retryAfterMs).toBe(
      7000,
    );
    const epoch = String(Math.floor(Date.now() / 1000) + 60);
    const absolute = answer(429, 'limit exceeded', { 'x-ratelimit-reset': epoch });
    const wait = (await failure(adapter({ fetch: absolute }).send({ to: CHANNEL, text: 'hi' }))).retryAfterMs;
    expect(wait).toBeGreaterThan(55_000);
    expect(wait).toBeLessThanOrEqual(60_000);
    const bare = await failure(adapter({ fetch: answer(429, '') }).send({ to: CHANNEL, text: 'hi' }));
    expect(bare.permanent).toBe(false);
    expect(bare.retryAfterMs).toBeUndefined();
  });

  it('treats a refused token as permanent, naming the setting but not the token', async () => {
    const wrong = 'wrong-token-0123456789abcdef';
    const error = await failure(adapter({ token: wrong }).send({ to: CHANNEL, text: 'hi' }), wrong);
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('api.context.session_expired.app_error');
    expect(error.message).toContain('channels.mattermost.token');
    expect(mm.posts).toHaveLength(0);
  });

  it('treats a channel the bot cannot post in (or that does not exist) as permanent', async () => {
    const error = await failure(adapter().send({ to: mattermostId(), text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('api.context.permissions.app_error');
    expect(error.message).toContain('HTTP 403');
  });

  it('treats a wrong base URL (404) and an invalid post (400) as permanent', async () => {
    const missing = await failure(
      adapter({ baseUrl: `${mm.url}/mattermost` }).send({ to: CHANNEL, text: 'hi' }),
    );
    expect(missing.permanent).toBe(true);
    expect(missing.message).toContain('channels.mattermost.baseUrl');
    const invalid = answer(
      400,
      JSON.stringify({
        id: 'model.post.is_valid.channel_id.app_error',
        message: 'Invalid channel id.',
        detailed_error: '',
        request_id: 'r',
        status_code: 400,
      }),
    );
    const error = await failure(adapter({ fetch: invalid }).send({ to: CHANNEL, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toBe(
      'mattermost: Invalid channel id. (model.post.is_valid.channel_id.app_error, HTTP 400)',
    );
  });

  it('treats 5xx answers as retryable, JSON or not', async () => {
    mm.failNext(1, 'server_error');
    const error = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.message).toContain('app.post.save.app_error');
    mm.failNext(1, 'bad_gateway');
    const gateway = await failure(adapter().send({ to: CHANNEL, text: 'hi' }));
    expect(gateway.permanent).toBe(false);
    expect(gateway.message).toContain('HTTP 502');
  });

  it('treats a dropped connection, a refused one and a timeout as retryable', async () => {
    mm.failNext(1, 'network');
    expect((await failure(adapter().send({ to: CHANNEL, text: 'hi' }))).permanent).toBe(false);

    const closed = await startFakeMattermost({ token: TOKEN });
    const url = closed.url;
    await closed.close();
    const refused = await failure(adapter({ baseUrl: url }).send({ to: CHANNEL, text: 'hi' }));
    expect(refused.message).toBe('mattermost: request failed (ECONNREFUSED)');

    const slow = await failure(adapter({ fetch: hanging, timeoutMs: 50 }).send({ to: CHANNEL, text: 'hi' }));
    expect(slow.permanent).toBe(false);
    expect(slow.message).toContain('no answer within');
  });

  it("rethrows the caller's abort as it is", async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const sending = adapter({ fetch: hanging }).send({ to: CHANNEL, text: 'hi' }, controller.signal);
    controller.abort(reason);
    await expect(sending).rejects.toBe(reason);
  });

  it('scrubs the token from whatever the server echoes back', async () => {
    const echo = answer(
      500,
      JSON.stringify({ id: 'x', message: `token ${TOKEN} is odd`, detailed_error: TOKEN, status_code: 500 }),
    );
    const error = await failure(adapter({ fetch: echo }).send({ to: CHANNEL, text: 'hi' }));
    expect(error.message).toContain('[redacted]');
  });
});

describe('createChannelAdapters', () => {
  it('creates the mattermost adapter from its config block', async () => {
    const adapters = createChannelAdapters({ mattermost: { baseUrl: mm.url, token: TOKEN } });
    expect([...adapters.keys()]).toEqual(['mattermost']);
    await adapters.get('mattermost')?.send({ to: CHANNEL, text: 'via the registry' });
    expect(mm.posts.map((post) => post.message)).toEqual(['via the registry']);
  });
});
