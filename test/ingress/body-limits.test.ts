/**
 * Body limit (413) and body deadline (408) over real sockets (docs/errors.md): the client must receive the answer even
 * while it is still sending, and nothing is stored for a refused body.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sleep } from '../helpers/wait.js';
import {
  BEARER,
  expectError,
  type Json,
  listEvents,
  postHook,
  RawClient,
  type RawResponse,
} from './support.js';

const LIMIT = 1024;
const MB = 1024 * 1024;

/** A wake body of exactly `bytes` bytes: `{"text":"aaa…"}`. */
function wakeBodyOf(bytes: number, fill = 'a'): string {
  const body = `{"text":"${fill.repeat(bytes - 11)}"}`;
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}

function chunked(data: string | Buffer): string | Buffer {
  const buffer = Buffer.isBuffer(data) ? data : Buffer.from(data);
  return Buffer.concat([Buffer.from(`${buffer.length.toString(16)}\r\n`), buffer, Buffer.from('\r\n')]);
}
const LAST_CHUNK = '0\r\n\r\n';

function expectTooLarge(response: RawResponse): void {
  expect(response.statusLine).toMatch(/^HTTP\/1\.1 413 /);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json).toEqual({ ok: false, error: expect.any(String), code: 'payload_too_large' });
}

function expectTimedOut(response: RawResponse): void {
  expect(response.statusLine).toMatch(/^HTTP\/1\.1 408 /);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json).toEqual({ ok: false, error: expect.any(String), code: 'request_timeout' });
}

async function eventCount(gw: TestGateway): Promise<number> {
  return (await listEvents(gw)).length;
}

/** Posts a big body with node:http, writing it all (respecting backpressure); resolves on 'response'. */
function httpClientPost(
  gw: TestGateway,
  totalBytes: number,
  headers: Record<string, string | number>,
): Promise<{ status: number; body: Json; bytesWritten: number }> {
  const url = new URL('/hooks/wake', gw.url);
  return new Promise((resolve, reject) => {
    let responded = false;
    let bytesWritten = 0;
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers, agent: false },
      (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
            bytesWritten,
          });
        });
      },
    );
    req.on('error', (error) => {
      if (!responded) reject(error);
    });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const pump = () => {
      while (bytesWritten < totalBytes && !req.destroyed) {
        bytesWritten += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!req.destroyed) req.end();
    };
    req.write('{"text":"');
    pump();
  });
}

describe('413 payload_too_large over a real socket', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ hooks: { maxBodyBytes: LIMIT } });
  });
  afterAll(() => gw.stop());

  it('accepts a body of exactly hooks.maxBodyBytes bytes (Content-Length)', async () => {
    const answer = await postHook(gw, 'wake', wakeBodyOf(LIMIT), BEARER);
    expect(answer.status, answer.text).toBe(200);
  });

  it('refuses one byte more (Content-Length)', async () => {
    const answer = await postHook(gw, 'wake', wakeBodyOf(LIMIT + 1, 'b'), BEARER);
    expectError(answer, 413, 'payload_too_large');
  });

  it('counts bytes, not characters', async () => {
    // 600 two-byte characters: under the limit in characters, over it in bytes.
    const answer = await postHook(gw, 'wake', { text: 'é'.repeat(600) }, BEARER);
    expectError(answer, 413, 'payload_too_large');
  });

  it('answers at once on an oversized Content-Length, before any body byte is sent', async () => {
    const before = await eventCount(gw);
    const client = await RawClient.open(gw);
    try {
      await client.write(
        RawClient.head('/hooks/wake', { 'Content-Length': 10 * MB, 'Content-Type': 'application/json' }),
      );
      const response = await client.response(5_000);
      expectTooLarge(response);
      expect(response.headers.connection).toBe('close');
    } finally {
      client.close();
    }
    expect(await eventCount(gw)).toBe(before);
  });

  it('answers an oversized Content-Length after the client sent the whole body', async () => {
    const client = await RawClient.open(gw);
    try {
      const body = wakeBodyOf(4 * LIMIT);
      await client.write(RawClient.head('/hooks/wake', { 'Content-Length': Buffer.byteLength(body) }) + body);
      expectTooLarge(await client.response());
    } finally {
      client.close();
    }
  });

  it('refuses a chunked body without Content-Length once it passes the limit', async () => {
    const before = await eventCount(gw);
    const client = await RawClient.open(gw);
    try {
      await client.write(RawClient.head('/hooks/wake', { 'Transfer-Encoding': 'chunked' }));
      const body = wakeBodyOf(2 * LIMIT, 'c');
      for (let i = 0; i < body.length; i += 256) await client.write(chunked(body.slice(i, i + 256)));
      await client.write(LAST_CHUNK);
      expectTooLarge(await client.response());
    } finally {
      client.close();
    }
    expect(await eventCount(gw)).toBe(before);
  });

  it('accepts a chunked body of exactly the limit', async () => {
    const client = await RawClient.open(gw);
    try {
      await client.write(RawClient.head('/hooks/wake', { 'Transfer-Encoding': 'chunked' }));
      const body = wakeBodyOf(LIMIT, 'd');
      for (let i = 0; i < body.length; i += 100) await client.write(chunked(body.slice(i, i + 100)));
      await client.write(LAST_CHUNK);
      const response = await client.response();
      expect(response.status, response.body).toBe(200);
      expect(response.json).toMatchObject({ ok: true, eventOutcome: 'queued' });
    } finally {
      client.close();
    }
  });

  it('delivers the 413 while the client keeps sending several MB (Content-Length)', async () => {
    const before = await eventCount(gw);
    const total = 8 * MB;
    const client = await RawClient.open(gw);
    try {
      await client.write(RawClient.head('/hooks/wake', { 'Content-Length': total }));
      const chunk = Buffer.alloc(64 * 1024, 'e');
      let sent = 0;
      // A naive client: it writes the whole body before it reads anything. Its socket is
      // not read meanwhile, so a reset from the server would discard the unread answer.
      client.socket.pause();
      while (sent < total) {
        if (!(await client.write(chunk))) break;
        sent += chunk.length;
      }
      client.socket.resume();
      const response = await client.response();
      expectTooLarge(response);
      expect(sent).toBe(total);
    } finally {
      client.close();
    }
    expect(await eventCount(gw)).toBe(before);
  });

  it('delivers the 413 while the client keeps sending several MB (chunked)', async () => {
    const before = await eventCount(gw);
    const total = 8 * MB;
    const client = await RawClient.open(gw);
    try {
      await client.write(RawClient.head('/hooks/wake', { 'Transfer-Encoding': 'chunked' }));
      const chunk = chunked(Buffer.alloc(64 * 1024, 'f'));
      let sent = 0;
      client.socket.pause();
      while (sent < total) {
        if (!(await client.write(chunk))) break;
        sent += 64 * 1024;
      }
      await client.write(LAST_CHUNK);
      client.socket.resume();
      const response = await client.response();
      expectTooLarge(response);
      expect(sent).toBe(total);
    } finally {
      client.close();
    }
    expect(await eventCount(gw)).toBe(before);
  });

  it('gives node:http a response event with 413 while it writes a big body (Content-Length)', async () => {
    const total = 4 * MB;
    const result = await httpClientPost(gw, total, {
      ...BEARER,
      'content-type': 'application/json',
      'content-length': total + 9, // + the '{"text":"' prefix
    });
    expect(result.status).toBe(413);
    expect(result.body).toEqual({ ok: false, error: expect.any(String), code: 'payload_too_large' });
  });

  it('gives node:http a response event with 413 while it writes a big body (chunked)', async () => {
    const result = await httpClientPost(gw, 4 * MB, { ...BEARER, 'content-type': 'application/json' });
    expect(result.status).toBe(413);
    expect(result.body.code).toBe('payload_too_large');
  });

  it('keeps serving normally after all those refusals, and stored nothing oversized', async () => {
    const answer = await gw.hook('wake', { text: 'small and fine' });
    expect(answer.status).toBe(200);
    const events = await listEvents(gw);
    for (const event of events) expect(Buffer.byteLength(event.text)).toBeLessThanOrEqual(LIMIT);
    expect(events.map((e) => e.text)).toContain('small and fine');
  });

  it('applies the limit to /agent too', async () => {
    const answer = await gw.hook('agent', { message: 'm'.repeat(LIMIT) });
    expectError(answer, 413, 'payload_too_large');
  });
});

describe('408 request_timeout (body deadline shortened to 500 ms)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ hooks: { maxBodyBytes: LIMIT } }, { bodyTimeoutMs: 500 });
  });
  afterAll(() => gw.stop());

  it('answers 408 when only part of a Content-Length body arrives', async () => {
    const before = await eventCount(gw);
    const client = await RawClient.open(gw);
    try {
      const started = Date.now();
      await client.write(
        RawClient.head('/hooks/wake', { 'Content-Length': 100, 'Content-Type': 'application/json' }),
      );
      await client.write('{"text":"pa');
      const response = await client.response(10_000);
      expectTimedOut(response);
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    } finally {
      client.close();
    }
    expect(await eventCount(gw)).toBe(before);
  });

  it('answers 408 when no body byte arrives at all', async () => {
    const client = await RawClient.open(gw);
    try {
      await client.write(RawClient.head('/hooks/agent', { 'Content-Length': 50 }));
      expectTimedOut(await client.response(10_000));
    } finally {
      client.close();
    }
  });

  it('answers 408 when a chunked body never ends', async () => {
    const client = await RawClient.open(gw);
    try {
      await client.write(RawClient.head('/hooks/wake', { 'Transfer-Encoding': 'chunked' }));
      await client.write(chunked('{"text":"never'));
      expectTimedOut(await client.response(10_000));
    } finally {
      client.close();
    }
  });

  it('accepts a body that arrives slowly but within the deadline', async () => {
    const client = await RawClient.open(gw);
    try {
      const body = '{"text":"slow but in time"}';
      await client.write(RawClient.head('/hooks/wake', { 'Content-Length': body.length }));
      await client.write(body.slice(0, 10));
      await sleep(150);
      await client.write(body.slice(10));
      const response = await client.response();
      expect(response.status, response.body).toBe(200);
      expect(response.json).toMatchObject({ ok: true, eventOutcome: 'queued' });
    } finally {
      client.close();
    }
  });

  it('checks the token before waiting for the body: a partial body with a bad token is 401 at once', async () => {
    const client = await RawClient.open(gw);
    try {
      const started = Date.now();
      const head = RawClient.head('/hooks/wake', { 'Content-Length': 100 }).replace(
        /Authorization: Bearer \S+/,
        'Authorization: Bearer wrong',
      );
      await client.write(`${head}{"te`);
      const response = await client.response(5_000);
      expect(response.status).toBe(401);
      expect(response.json.code).toBe('unauthorized');
      // Answered before the body deadline could have produced a 408.
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      client.close();
    }
  });

  it('checks the hook name before waiting for the body: a partial body to an unknown hook is 404 at once', async () => {
    const client = await RawClient.open(gw);
    try {
      await client.write(`${RawClient.head('/hooks/unknown', { 'Content-Length': 100 })}{"te`);
      const response = await client.response(5_000);
      expect(response.status).toBe(404);
      expect(response.json.code).toBe('not_found');
    } finally {
      client.close();
    }
  });
});
