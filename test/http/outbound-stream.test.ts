/**
 * The outbound client's streamed answers (`stream`; docs/agent-runs.md, "Streamed
 * calls") against a loopback server: pieces as they come, the first-byte and idle time
 * limits, a connection that breaks mid-body, a refusing status read whole and
 * classified, the caller's abort, and redaction of secrets.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutboundClient, OutboundError } from '../../src/http/outbound.js';
import { type FakeServer, readBody, sendJson, startServer, waitUnlessClosed } from '../fakes/support.js';

const KEY = 'sk-SECRET-key-0123456789';
let server: FakeServer;
let answer: (res: ServerResponse) => Promise<void> | void;

beforeAll(async () => {
  server = await startServer(async (req, res) => {
    await readBody(req);
    await answer(res);
  });
});
afterAll(() => server.close());

const client = createOutboundClient({ label: 'model', secrets: [KEY] });
/** The limits of the tests of those limits. */
const limits = { firstByteMs: 300, idleMs: 300 };
/**
 * Where a limit is not what is tested it is far off: on a loaded machine the first
 * answer of a loopback server can take longer than 0.3 s.
 */
const FAR_MS = 10_000;
const roomy = { firstByteMs: FAR_MS, idleMs: FAR_MS };

async function collect(text: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const piece of text) out.push(piece);
  return out;
}

describe('outbound stream', () => {
  it('hands the body back piece by piece as it arrives, even past the idle limit in all', async () => {
    answer = async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 6; i++) {
        res.write(`piece${i}\n`);
        await waitUnlessClosed(res, 250);
      }
      res.end();
    };
    // 1.5 s in all, a piece every 0.25 s: past the idle limit, with room for a slow timer.
    const stream = await client.stream(
      { url: server.url, json: { a: 1 } },
      { firstByteMs: FAR_MS, idleMs: 1000 },
    );
    expect(stream.status).toBe(200);
    const pieces = await collect(stream.text);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe('piece0\npiece1\npiece2\npiece3\npiece4\npiece5\n');
  });

  it('decodes a character split between two pieces', async () => {
    const bytes = Buffer.from('é€😀');
    answer = async (res) => {
      res.writeHead(200);
      for (const byte of bytes) {
        res.write(Buffer.from([byte]));
        await waitUnlessClosed(res, 5);
      }
      res.end();
    };
    const stream = await client.stream({ url: server.url, json: {} }, roomy);
    expect((await collect(stream.text)).join('')).toBe('é€😀');
  });

  it('no status and headers within the first-byte limit: a temporary timeout', async () => {
    answer = (res) => waitUnlessClosed(res, 2000);
    const error = await client.stream({ url: server.url, json: {} }, limits).catch((e) => e);
    expect(error).toBeInstanceOf(OutboundError);
    expect(error).toMatchObject({
      failure: 'timeout',
      kind: 'temporary',
      timeoutMs: 300,
      duringAnswer: false,
    });
    expect(error.message).toBe('model: no answer within 0.3 s');
  });

  it('a silence longer than the idle limit mid-body: a timeout during the answer', async () => {
    answer = async (res) => {
      res.writeHead(200);
      res.write('first');
      await waitUnlessClosed(res, 2000);
      res.end();
    };
    const stream = await client.stream({ url: server.url, json: {} }, { firstByteMs: FAR_MS, idleMs: 300 });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const piece of stream.text) seen.push(piece);
    })().catch((e) => e);
    expect(seen).toEqual(['first']);
    expect(error).toMatchObject({ failure: 'timeout', duringAnswer: true, timeoutMs: 300 });
    expect(error.message).toBe('model: the answer paused for more than 0.3 s');
  });

  it('a connection that breaks mid-body: a network failure during the answer', async () => {
    answer = (res) => {
      res.writeHead(200);
      res.write('first');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const stream = await client.stream({ url: server.url, json: {} }, roomy);
    const error = await collect(stream.text).catch((e) => e);
    expect(error).toMatchObject({ failure: 'network', kind: 'temporary', duringAnswer: true });
  });

  it('a refusing status is read whole and classified, its message redacted', async () => {
    answer = (res) => sendJson(res, 401, { error: { message: `bad key ${KEY}` } });
    const error = await client
      .stream(
        { url: server.url, json: {} },
        roomy,
        undefined,
        (a) => (a.json?.error as { message?: string } | undefined)?.message,
      )
      .catch((e) => e);
    expect(error).toMatchObject({ failure: 'status', kind: 'permanent', status: 401 });
    expect(error.message).toBe('model: 401 bad key [redacted]');
    answer = (res) => sendJson(res, 429, { error: 'slow down' }, { 'retry-after': '3' });
    const limited = await client.stream({ url: server.url, json: {} }, roomy).catch((e) => e);
    expect(limited).toMatchObject({ failure: 'status', kind: 'temporary', status: 429, retryAfterMs: 3000 });
  });

  it("the caller's abort is rethrown as the caller's reason", async () => {
    answer = async (res) => {
      res.writeHead(200);
      res.write('first');
      await waitUnlessClosed(res, 2000);
      res.end();
    };
    const controller = new AbortController();
    const reason = new Error('run timed out');
    const stream = await client.stream({ url: server.url, json: {} }, roomy, controller.signal);
    const reading = collect(stream.text).catch((e) => e);
    setTimeout(() => controller.abort(reason), 50);
    expect(await reading).toBe(reason);
  });
});
