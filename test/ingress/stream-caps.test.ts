/**
 * How many streamed answers may be open (docs/callers.md, "Streamed answers";
 * docs/errors.md): `hooks.streams.maxPerToken` per hook token (past it 429
 * `too_many_streams`, with Retry-After) and `hooks.streams.max` in all (past it 503
 * `streams_full`), answered as JSON before anything is committed; requests that do not
 * stream are not counted, and a stream that ends frees its slot. Over real sockets, with
 * no workers, so the runs stay queued and their streams open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openRawStream, type RawStream } from '../helpers/raw-stream.js';
import { isStream, postStream } from '../helpers/sse.js';
import { waitFor } from '../helpers/wait.js';

const OTHER_TOKEN = 'other-sender-token-0123456789abcdef01';
const agentBody = (message: string) => ({ message, deliver: false, wakeMode: 'next-heartbeat' });

describe('stream caps', () => {
  let gw: TestGateway;
  const open: RawStream[] = [];

  beforeAll(async () => {
    gw = await startTestGateway(
      {
        hooks: {
          maxWaitSeconds: 60,
          tokens: [{ id: 'other', token: OTHER_TOKEN }],
          streams: { maxPerToken: 2, max: 3 },
        },
      },
      { workers: false },
    );
  });
  afterAll(async () => {
    for (const stream of open) stream.destroy();
    await gw?.stop();
  });

  const queued = async () => (await gw.gateway.store.counts()).runsQueued;
  /** A stream that stays open (its run stays queued): waits for `accepted`. */
  const openStream = async (token: string, message: string): Promise<RawStream> => {
    const stream = openRawStream(gw.url, '/hooks/agent', agentBody(message), {
      authorization: `Bearer ${token}`,
    });
    open.push(stream);
    await stream.until((s) => s.events()[0]?.event === 'accepted', `the stream "${message}" to open`);
    return stream;
  };
  const refused = async (token: string, message: string): Promise<Answer> => {
    const answer = await postStream(`${gw.url}/hooks/agent`, agentBody(message), {
      authorization: `Bearer ${token}`,
    });
    if (isStream(answer)) throw new Error(`"${message}" was streamed, not refused`);
    return answer;
  };

  it('429 too_many_streams past the per-token cap, 503 streams_full past the total, nothing stored; slots free as streams end', async () => {
    const first = await openStream(HOOK_TOKEN, 'first');
    await openStream(HOOK_TOKEN, 'second');
    expect(await queued()).toBe(2);

    const perToken = await refused(HOOK_TOKEN, 'third of the same token');
    expect(perToken.status).toBe(429);
    expect(perToken.headers.get('content-type')).toContain('application/json');
    expect(perToken.headers.get('retry-after')).toBe('5');
    expect(perToken.body).toEqual({
      ok: false,
      code: 'too_many_streams',
      error: expect.stringContaining('hooks.streams.maxPerToken is 2'),
    });
    // Refused before the commit: no run was stored for it.
    expect(await queued()).toBe(2);

    // The same request without Accept: text/event-stream is not a stream: accepted as usual.
    const plain = await gw.hook('agent', agentBody('not streamed'));
    expect(plain.status).toBe(202);
    expect(await queued()).toBe(3);

    // Another token has slots of its own, until the gateway's total is reached.
    await openStream(OTHER_TOKEN, 'other token');
    const total = await refused(OTHER_TOKEN, 'past the total');
    expect(total.status).toBe(503);
    expect(total.headers.get('retry-after')).toBe('5');
    expect(total.body).toEqual({
      ok: false,
      code: 'streams_full',
      error: expect.stringContaining('hooks.streams.max is 3'),
    });
    expect(await queued()).toBe(4);

    // A client that leaves frees its slot: the token may open a stream again.
    first.destroy();
    await waitFor(async () => {
      const again = await postStream(`${gw.url}/hooks/agent`, agentBody('after one left'));
      if (!isStream(again)) return false;
      again.abort();
      return true;
    }, 'a slot to be free again');
    expect(await queued()).toBe(5);
  });
});
