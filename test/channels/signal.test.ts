/**
 * The Signal adapter against the loopback signal-cli JSON-RPC fake: delivery, the
 * request it sends, and how each JSON-RPC error maps to a DeliveryError.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createChannelAdapters } from '../../src/channels/index.js';
import { createSignalAdapter, SIGNAL_TEXT_LIMIT } from '../../src/channels/platforms/signal/index.js';
import { DeliveryError } from '../../src/channels/types.js';
import { type FakeSignal, startFakeSignal } from '../fakes/signal.js';

const ACCOUNT = '+15550000000';
const FRIEND = '+15551230001';
const STRANGER = '+15559990009';
const CHANGED = '+15551230002';
let sig: FakeSignal;

beforeAll(async () => {
  sig = await startFakeSignal({ account: ACCOUNT, registered: [FRIEND], untrusted: [CHANGED] });
});
afterAll(async () => {
  await sig.close();
});
beforeEach(() => {
  sig.messages.length = 0;
  sig.requests.length = 0;
});

const adapter = (
  options: { rpcUrl?: string; account?: string; timeoutMs?: number; fetch?: typeof fetch } = {},
) =>
  createSignalAdapter(
    { rpcUrl: options.rpcUrl ?? sig.url, account: options.account ?? ACCOUNT },
    { timeoutMs: options.timeoutMs, fetch: options.fetch },
  );

const hanging: typeof fetch = (_url, init) =>
  new Promise((_resolve, reject) =>
    init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
  );

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  return error as DeliveryError;
}

const rpcAnswer =
  (body: unknown, status = 200): typeof fetch =>
  async () =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

describe('signal adapter: delivery', () => {
  it('calls send with account, recipient list and message, and returns the timestamp', async () => {
    const result = await adapter().send({ to: FRIEND, text: 'Build #12 passed' });
    expect(sig.requests[0]).toMatchObject({
      httpMethod: 'POST',
      path: '/api/v1/rpc',
      contentType: 'application/json',
      body: {
        jsonrpc: '2.0',
        method: 'send',
        params: { account: ACCOUNT, recipient: [FRIEND], message: 'Build #12 passed' },
        id: expect.any(String),
      },
      status: 200,
    });
    expect(result).toEqual({ messageId: String(sig.messages[0]?.timestamp) });
    expect(sig.messagesFor(FRIEND).map((m) => m.message)).toEqual(['Build #12 passed']);
  });

  it('uses a fresh request id each time', async () => {
    await adapter().send({ to: FRIEND, text: 'one' });
    await adapter().send({ to: FRIEND, text: 'two' });
    const ids = sig.requests.map((r) => (r.body as { id: string }).id);
    expect(new Set(ids).size).toBe(2);
  });

  it('declares 2000 characters and refuses longer or empty text without a request', async () => {
    expect(adapter().maxMessageLength).toBe(SIGNAL_TEXT_LIMIT);
    await adapter().send({ to: FRIEND, text: 'x'.repeat(2000) });
    expect((await failure(adapter().send({ to: FRIEND, text: 'x'.repeat(2001) }))).permanent).toBe(true);
    expect((await failure(adapter().send({ to: FRIEND, text: '' }))).permanent).toBe(true);
    expect(sig.requests).toHaveLength(1);
  });

  it('moves credentials in rpcUrl into Basic auth and keeps them out of errors', async () => {
    const guarded = await startFakeSignal({
      account: ACCOUNT,
      registered: [FRIEND],
      basicAuth: { user: 'relay', password: 'pr0xy-s3cret' },
    });
    try {
      const url = guarded.url.replace('http://', 'http://relay:pr0xy-s3cret@');
      await adapter({ rpcUrl: url }).send({ to: FRIEND, text: 'through the proxy' });
      expect(guarded.messages.map((m) => m.message)).toEqual(['through the proxy']);
      const wrong = guarded.url.replace('http://', 'http://relay:wrong-pass@');
      const error = await failure(adapter({ rpcUrl: wrong }).send({ to: FRIEND, text: 'hi' }));
      expect(error.permanent).toBe(true);
      expect(error.message).not.toContain('wrong-pass');
    } finally {
      await guarded.close();
    }
  });
});

describe('signal adapter: failures', () => {
  it('maps rate limiting (-5) to a retryable error waiting retryAfterSeconds', async () => {
    sig.failNext(1, 'rate_limit', { retryAfter: 3 });
    const error = await failure(adapter().send({ to: FRIEND, text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.retryAfterMs).toBe(3000);
    expect(error.message).toContain('JSON-RPC error -5');
    await expect(adapter().send({ to: FRIEND, text: 'hi' })).resolves.toHaveProperty('messageId');
  });

  it('treats a recipient not on Signal as permanent', async () => {
    const error = await failure(adapter().send({ to: STRANGER, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('UNREGISTERED_FAILURE');
    expect(error.message).toContain('not registered on Signal');
  });

  it('treats an invalid number as permanent', async () => {
    // Well-formed E.164 (the door lets it through), too short for signal-cli.
    const error = await failure(adapter().send({ to: '+12345', text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain("Invalid phone number '+12345'");
  });

  it('treats a changed safety number (-4) as permanent', async () => {
    const error = await failure(adapter().send({ to: CHANGED, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('JSON-RPC error -4');
    expect(error.message).toContain('safety number');
  });

  it('treats an account the daemon does not have as permanent, naming the setting', async () => {
    const error = await failure(adapter({ account: '+15557770000' }).send({ to: FRIEND, text: 'hi' }));
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('Specified account does not exist');
    expect(error.message).toContain('channels.signal.account');
  });

  it('treats IO, internal and network-only failures as retryable', async () => {
    for (const kind of ['io_error', 'internal_error', 'network_failure', 'bad_gateway', 'network'] as const) {
      sig.failNext(1, kind);
      const error = await failure(adapter().send({ to: FRIEND, text: 'hi' }));
      expect(error.permanent, kind).toBe(false);
    }
  });

  it('treats a wrong endpoint path as permanent', async () => {
    const error = await failure(
      adapter({ rpcUrl: sig.url.replace('/api/v1/rpc', '/rpc') }).send({ to: FRIEND, text: 'hi' }),
    );
    expect(error.permanent).toBe(true);
    expect(error.message).toContain('channels.signal.rpcUrl');
  });

  it('treats a refused connection and a timeout as retryable, without the URL', async () => {
    const closed = await startFakeSignal({ account: ACCOUNT });
    const url = closed.url;
    await closed.close();
    const refused = await failure(adapter({ rpcUrl: url }).send({ to: FRIEND, text: 'hi' }));
    expect(refused.permanent).toBe(false);
    expect(refused.message).toBe('signal: request failed (ECONNREFUSED)');

    const slow = await failure(adapter({ fetch: hanging, timeoutMs: 50 }).send({ to: FRIEND, text: 'hi' }));
    expect(slow.permanent).toBe(false);
    expect(slow.message).toContain('no answer within');
  });

  it("rethrows the caller's abort as it is", async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const sending = adapter({ fetch: hanging }).send({ to: FRIEND, text: 'hi' }, controller.signal);
    controller.abort(reason);
    await expect(sending).rejects.toBe(reason);
  });

  it('reads failed recipients from a successful answer (older signal-cli)', async () => {
    const older = rpcAnswer({
      jsonrpc: '2.0',
      result: { timestamp: 1, results: [{ recipientAddress: { number: FRIEND }, type: 'NETWORK_FAILURE' }] },
      id: 'x',
    });
    const error = await failure(adapter({ fetch: older }).send({ to: FRIEND, text: 'hi' }));
    expect(error.permanent).toBe(false);
    expect(error.message).toContain('NETWORK_FAILURE');
  });

  it('treats protocol errors as permanent and unknown codes as retryable', async () => {
    const protocol = rpcAnswer({
      jsonrpc: '2.0',
      error: { code: -32601, message: 'Method not implemented' },
      id: 1,
    });
    expect((await failure(adapter({ fetch: protocol }).send({ to: FRIEND, text: 'hi' }))).permanent).toBe(
      true,
    );
    const unknown = rpcAnswer({ jsonrpc: '2.0', error: { code: -9, message: 'Something new' }, id: 1 });
    expect((await failure(adapter({ fetch: unknown }).send({ to: FRIEND, text: 'hi' }))).permanent).toBe(
      false,
    );
  });
});

describe('createChannelAdapters', () => {
  it('creates the signal adapter from its config block', async () => {
    const adapters = createChannelAdapters({ signal: { rpcUrl: sig.url, account: ACCOUNT } });
    expect([...adapters.keys()]).toEqual(['signal']);
    await adapters.get('signal')?.send({ to: FRIEND, text: 'via the registry' });
    expect(sig.messages.map((m) => m.message)).toEqual(['via the registry']);
  });
});
