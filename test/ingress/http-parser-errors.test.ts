/**
 * Requests that break HTTP itself, over real sockets: a committed request is
 * answered before the connection closes (bytes after it are garbage, or more
 * body than its Content-Length), every refusal by Node's parser or the router
 * has the gateway's JSON error shape (docs/endpoints.md), and a malformed
 * Content-Type is no reason to refuse a hook's body.
 */
import type { IncomingMessage } from 'node:http';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import type { Logger } from '../../src/log.js';
import { parserErrorAnswer } from '../../src/server/client-errors.js';
import { startGateway } from '../../src/server/gateway.js';
import { type Answer, startTestGateway, type TestGateway, tempDir, writeConfig } from '../helpers/gateway.js';
import { BEARER, expectError, getRun, listEvents, RawClient, type RawResponse, send } from './support.js';

const GARBAGE = 'GARBAGE \x00\x01 not http\r\n\r\n';

/** A complete POST to a hook: head (with the hook token) and JSON body, Content-Length framed. */
function post(path: string, json: unknown, extraHeaders: Record<string, string | number> = {}): string {
  const body = JSON.stringify(json);
  return RawClient.head(path, { 'Content-Length': Buffer.byteLength(body), ...extraHeaders }) + body;
}

/** Asserts the gateway's error shape on a raw response, with `Connection: close`. */
function expectClosingError(response: RawResponse, status: number, code: string): void {
  expect({ status: response.status, code: response.json?.code }, response.body).toEqual({ status, code });
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json).toEqual({ ok: false, error: expect.any(String), code });
  expect(response.headers.connection).toBe('close');
}

/** Sends `data` on a fresh connection and returns the answers and whether the server then ended it. */
async function exchange(gw: TestGateway, data: string, count = 1): Promise<RawResponse[]> {
  const client = await RawClient.open(gw);
  try {
    await client.write(data);
    return await client.responses(count);
  } finally {
    client.close();
  }
}

async function textsOf(gw: TestGateway): Promise<string[]> {
  return (await listEvents(gw)).map((event) => event.text);
}

describe('a committed request gets its own answer before the connection closes', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it('answers a wake followed by garbage in the same write with 200, then 400, then closes', async () => {
    const text = 'wake followed by garbage';
    const client = await RawClient.open(gw);
    try {
      await client.write(post('/hooks/wake', { text }) + GARBAGE);
      const [first, second] = await client.responses(2);
      expect(first?.status, first?.body).toBe(200);
      expect(first?.json).toMatchObject({ ok: true, eventOutcome: 'queued', eventId: expect.any(String) });
      expectClosingError(second as RawResponse, 400, 'bad_request');
      await client.serverEnd();
    } finally {
      client.close();
    }
    expect((await textsOf(gw)).filter((t) => t === text)).toHaveLength(1);
  });

  it('answers an agent request followed by garbage with 202 and its runId first', async () => {
    const message = 'agent followed by garbage';
    const [first, second] = await exchange(gw, post('/hooks/agent', { message }) + GARBAGE, 2);
    expect(first?.status, first?.body).toBe(202);
    const run = await getRun(gw, first?.json.runId);
    expect(run.runId ?? run.id).toBe(first?.json.runId);
    expectClosingError(second as RawResponse, 400, 'bad_request');
  });

  it('commits exactly once when more body follows than Content-Length announced', async () => {
    // The client counted only the first object: the second parses as a broken next request.
    const announced = JSON.stringify({ text: 'counted by Content-Length' });
    const extra = JSON.stringify({ text: 'sent beyond Content-Length' });
    const head = RawClient.head('/hooks/wake', { 'Content-Length': Buffer.byteLength(announced) });
    const [first, second] = await exchange(gw, head + announced + extra, 2);
    expect(first?.status, first?.body).toBe(200);
    expectClosingError(second as RawResponse, 400, 'bad_request');
    const texts = await textsOf(gw);
    expect(texts.filter((t) => t === 'counted by Content-Length')).toHaveLength(1);
    expect(texts).not.toContain('sent beyond Content-Length');
  });

  it('holds the error until a commit that is still running has answered', async () => {
    const store = gw.gateway.store;
    const accept = store.accept.bind(store);
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The commit waits until the parse error has been reported to the server.
    store.accept = async (...args) => {
      await released;
      return accept(...args);
    };
    const clientErrorSeen = new Promise<void>((resolve) =>
      gw.gateway.app.server.once('clientError', () => resolve()),
    );
    const text = 'slow commit, garbage meanwhile';
    const client = await RawClient.open(gw);
    try {
      await client.write(post('/hooks/wake', { text }));
      await client.write(GARBAGE);
      await clientErrorSeen;
      expect(client.received.length).toBe(0); // nothing may overtake the committed answer
      release();
      const [first, second] = await client.responses(2);
      expect(first?.status, first?.body).toBe(200);
      expect(first?.json.eventOutcome).toBe('queued');
      expectClosingError(second as RawResponse, 400, 'bad_request');
    } finally {
      store.accept = accept;
      release();
      client.close();
    }
    expect((await textsOf(gw)).filter((t) => t === text)).toHaveLength(1);
  });

  it('answers every pipelined request before the garbage after them', async () => {
    const texts = ['pipelined one', 'pipelined two'];
    const data = texts.map((text) => post('/hooks/wake', { text })).join('') + GARBAGE;
    const responses = await exchange(gw, data, 3);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 400]);
    expectClosingError(responses[2] as RawResponse, 400, 'bad_request');
    const stored = await textsOf(gw);
    for (const text of texts) expect(stored.filter((t) => t === text)).toHaveLength(1);
  });

  it('answers at once, storing nothing, when the body itself breaks (bad chunk size)', async () => {
    const started = Date.now();
    const head = RawClient.head('/hooks/wake', { 'Transfer-Encoding': 'chunked' });
    const [response] = await exchange(gw, `${head}9\r\n{"text":"b\r\nzz\r\n`);
    expectClosingError(response as RawResponse, 400, 'bad_request');
    // Not after the 30 s body deadline: the body can no longer arrive.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await textsOf(gw)).not.toContain('b');
  });

  it('does not log a client that closes mid-body as a failed request', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const loaded = loadConfigFile(writeConfig(tempDir()), process.env);
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const gateway = await startGateway(loaded.config, pino({ level: 'info' }, sink) as unknown as Logger, {
      port: 0,
      workers: false,
    });
    try {
      let requestClosed: Promise<unknown> = Promise.resolve();
      const requestSeen = new Promise<void>((resolve) =>
        gateway.app.server.once('request', (request: IncomingMessage) => {
          // Emitted after the 'error' that the body reader answers (synchronously, with its log line).
          requestClosed = new Promise((closed) => request.once('close', closed));
          resolve();
        }),
      );
      const client = await RawClient.open({ url: gateway.url } as TestGateway);
      await client.write(`${RawClient.head('/hooks/wake', { 'Content-Length': 100 })}{"text":"cut`);
      await requestSeen;
      client.close();
      await requestClosed;
      await gateway.stop();
    } finally {
      sink.end();
    }
    expect(lines.filter((line) => line.includes('"level":50'))).toEqual([]);
  });

  it('keeps serving new connections normally afterwards', async () => {
    const answer = await gw.hook('wake', { text: 'after the garbage' });
    expect(answer.status, answer.text).toBe(200);
  });
});

describe('refusals by the HTTP parser and the router are JSON', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it.each([
    ['a request line that is not HTTP', 'HELLO\r\n\r\n'],
    ['an unknown method token', 'P@ST /hooks/wake HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['an unsupported HTTP version', 'GET /healthz HTTP/7.0\r\nHost: x\r\n\r\n'],
    ['a header line without a colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n'],
    ['a space before the header colon', 'GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n'],
    ['a non-numeric Content-Length', 'POST /hooks/wake HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n'],
    [
      'both Content-Length and chunked',
      'POST /hooks/wake HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}',
    ],
  ])('answers %s with 400 bad_request', async (_label, data) => {
    const [response] = await exchange(gw, data);
    expectClosingError(response as RawResponse, 400, 'bad_request');
  });

  it.each([
    ['an authority target', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'],
    ['a hook path', 'CONNECT /hooks/wake HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['tunnel bytes right after it', 'CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n\x16\x03\x01garbage'],
  ])('answers CONNECT with %s with 405 method_not_allowed and closes', async (_label, data) => {
    const [response] = await exchange(gw, data);
    expectClosingError(response as RawResponse, 405, 'method_not_allowed');
    expect(response?.headers.allow).toBe('POST');
  });

  it('answers headers over 16 KiB with 431 headers_too_large', async () => {
    const [response] = await exchange(
      gw,
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expectClosingError(response as RawResponse, 431, 'headers_too_large');
  });

  it('answers a request line over 16 KiB with 431 headers_too_large', async () => {
    const [response] = await exchange(gw, `GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectClosingError(response as RawResponse, 431, 'headers_too_large');
  });

  it('delivers the 431 to a client that keeps sending headers (lingering close, no reset)', async () => {
    const client = await RawClient.open(gw);
    try {
      // A naive client: it writes 4 MB of header lines before reading anything.
      client.socket.pause();
      let sent = 0;
      if (await client.write('GET /healthz HTTP/1.1\r\nHost: x\r\n')) {
        const line = `X-Pad: ${'p'.repeat(64 * 1024)}\r\n`;
        while (sent < 4 * 1024 * 1024 && (await client.write(line))) sent += line.length;
      }
      client.socket.resume();
      expect(sent).toBeGreaterThanOrEqual(4 * 1024 * 1024);
      expectClosingError(await client.response(), 431, 'headers_too_large');
    } finally {
      client.close();
    }
  });

  it('answers a path that is not valid percent-encoding with 400 invalid_url', async () => {
    for (const path of ['/api/runs/%', '/api/runs/%zz', '/hooks/%']) {
      const [response] = await exchange(gw, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(response?.status, path).toBe(400);
      expect(response?.headers['content-type']).toMatch(/^application\/json/);
      expect(response?.json).toEqual({ ok: false, error: expect.any(String), code: 'invalid_url' });
    }
  });

  it('answers an over-long path parameter with 414 uri_too_long', async () => {
    const answer = await gw.admin(`/api/runs/${'r'.repeat(5_000)}`);
    expectError(answer, 414, 'uri_too_long');
  });

  it('takes the longest session key the API accepts (512 characters, percent-encoded)', async () => {
    // 512 × "é" is 3,072 characters once encoded: past Fastify's default limit of 100.
    const answer = await gw.admin(`/api/sessions/${encodeURIComponent('é'.repeat(512))}/events`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ events: [] });
  });

  it('answers 404 for an unknown path whatever the body claims to be', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ 'content-type': 'application/json' }, '{not json'],
      [{ 'content-type': 'application/json' }, ''],
      [{ 'content-type': 'a/b c' }, '{}'],
      [{ 'content-type': 'application/xml' }, '<x/>'],
    ];
    for (const [headers, body] of cases) {
      const answer: Answer = await send(gw, '/api/nothing-here', { method: 'POST', headers, body });
      expectError(answer, 404, 'not_found');
    }
  });

  it('maps the parser error codes it cannot provoke quickly', () => {
    const timeout = Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
    expect(parserErrorAnswer(timeout).toJSON()).toMatchObject({ code: 'request_timeout' });
    expect(parserErrorAnswer(timeout).statusCode).toBe(408);
    const extensions = Object.assign(new Error('ext'), { code: 'HPE_CHUNK_EXTENSIONS_OVERFLOW' });
    expect(parserErrorAnswer(extensions).statusCode).toBe(413);
    const unknown = Object.assign(new Error('?'), { code: 'HPE_SOMETHING_NEW' });
    expect(parserErrorAnswer(unknown).toJSON()).toEqual({
      ok: false,
      error: 'malformed HTTP request',
      code: 'bad_request',
    });
  });
});

describe('a malformed Content-Type does not stop a hook body (parsed as JSON whatever it says)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it.each([
    'a/b c',
    ';;;',
    'application/json; charset=',
    '',
    'json',
    '/',
    'application/',
    'application/json;;; charset="unterminated',
    '{}',
  ])('accepts a wake labelled %j', async (contentType) => {
    const text = `content-type ${JSON.stringify(contentType)}`;
    const answer = await send(gw, '/hooks/wake', {
      headers: { ...BEARER, 'content-type': contentType },
      body: JSON.stringify({ text }),
    });
    expect(answer.status, answer.text).toBe(200);
    const events = await listEvents(gw);
    expect(events.find((e) => e.id === answer.body.eventId)?.text).toBe(text);
  });

  it('still refuses a malformed body behind a malformed Content-Type with invalid_json', async () => {
    const answer = await send(gw, '/hooks/agent', {
      headers: { ...BEARER, 'content-type': 'a/b c' },
      body: '{"message":',
    });
    expectError(answer, 400, 'invalid_json');
  });

  it('checks the token first: a malformed Content-Type without a token is 401', async () => {
    const answer = await send(gw, '/hooks/wake', {
      headers: { 'content-type': ';;;' },
      body: JSON.stringify({ text: 'no token' }),
    });
    expectError(answer, 401, 'unauthorized');
  });

  it('answers 405 for another method with a malformed Content-Type', async () => {
    const answer = await send(gw, '/hooks/wake', {
      method: 'PUT',
      headers: { ...BEARER, 'content-type': 'a/b c' },
      body: '{}',
    });
    expectError(answer, 405, 'method_not_allowed');
  });
});
