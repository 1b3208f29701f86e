/**
 * The shared outbound HTTP client against a loopback server: bodies, time
 * limits, network failures, the caller's abort, status classification,
 * Retry-After in its forms, and redaction of secrets in every message.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  classifyStatus,
  createOutboundClient,
  OutboundError,
  redactor,
  retryAfterMs,
} from '../../src/http/outbound.js';
import { type FakeServer, readBody, sendJson, sendText, startServer } from '../fakes/support.js';

const TOKEN = '123456:SECRET-bot-token';

interface Seen {
  method: string;
  path: string;
  contentType: string | undefined;
  raw: string;
}

let server: FakeServer;
const seen: Seen[] = [];
/** How the server answers the next request; default 200 `{ok:true}`. */
let answer: (res: ServerResponse) => void;

beforeAll(async () => {
  server = await startServer(async (req, res) => {
    const body = await readBody(req);
    seen.push({
      method: req.method ?? '',
      path: req.url ?? '',
      contentType: req.headers['content-type'],
      raw: body.raw,
    });
    answer(res);
  });
});
afterAll(async () => {
  await server.close();
});

const client = (options: { timeoutMs?: number; now?: () => number } = {}) =>
  createOutboundClient({ label: 'testing', secrets: [TOKEN], ...options });
const url = (path = '/x') => `${server.url}/bot${TOKEN}${path}`;

async function rejection(promise: Promise<unknown>): Promise<OutboundError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OutboundError);
  return error as OutboundError;
}

describe('send', () => {
  it('posts JSON and reads the answer whole, whatever its status', async () => {
    answer = (res) => sendJson(res, 418, { ok: false, description: 'teapot' });
    const result = await client().send({ url: url(), json: { a: 1 } });
    expect(result.status).toBe(418);
    expect(result.json).toEqual({ ok: false, description: 'teapot' });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', contentType: 'application/json', raw: '{"a":1}' });
  });

  it('sends a form, a raw body with its type, and GET without a body', async () => {
    answer = (res) => sendText(res, 200, 'plain');
    await client().send({ url: url(), form: { grant_type: 'client_credentials', scope: 'a b' } });
    expect(seen.at(-1)).toMatchObject({
      contentType: 'application/x-www-form-urlencoded',
      raw: 'grant_type=client_credentials&scope=a+b',
    });
    await client().send({ url: url(), json: {}, contentType: 'application/json; charset=utf-8' });
    expect(seen.at(-1)?.contentType).toBe('application/json; charset=utf-8');
    const got = await client().send({ url: url('/get') });
    expect(seen.at(-1)).toMatchObject({ method: 'GET', raw: '' });
    expect(got).toMatchObject({ status: 200, raw: 'plain', json: undefined });
  });

  it('gives up after the time limit with a temporary timeout error', async () => {
    answer = () => {}; // never answers
    const error = await rejection(client({ timeoutMs: 100 }).send({ url: url(), json: {} }));
    expect(error).toMatchObject({ failure: 'timeout', kind: 'temporary', temporary: true });
    expect(error.message).toBe('testing: no answer within 0.1 s');
  });

  it('reduces a network failure to its code, without the URL', async () => {
    const closed = await startServer(() => {});
    await closed.close();
    const error = await rejection(client().send({ url: `${closed.url}/bot${TOKEN}/x`, json: {} }));
    expect(error).toMatchObject({ failure: 'network', kind: 'temporary', code: 'ECONNREFUSED' });
    expect(error.message).toBe('testing: request failed (ECONNREFUSED)');
    expect(error.message).not.toContain(TOKEN);
  });

  it("rethrows the caller's abort reason untouched", async () => {
    answer = () => {};
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const pending = client().send({ url: url(), json: {} }, controller.signal);
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
  });
});

describe('for callers that must not trust the other side', () => {
  it('reads at most maxBodyBytes of the answer and says it was cut', async () => {
    answer = (res) => sendText(res, 200, 'é'.repeat(100));
    const cut = await client().send({ url: url(), maxBodyBytes: 11 });
    expect(cut).toMatchObject({ status: 200, truncated: true, json: undefined });
    expect(cut.raw).toBe(`${'é'.repeat(5)}\uFFFD`);
    const whole = await client().send({ url: url(), maxBodyBytes: 200 });
    expect(whole).toMatchObject({ truncated: false, raw: 'é'.repeat(100) });
  });

  it("returns a redirect as the answer with redirect: 'manual'", async () => {
    answer = (res) => {
      res.writeHead(302, { location: '/elsewhere' });
      res.end();
    };
    const before = seen.length;
    const got = await client().send({ url: url(), redirect: 'manual' });
    expect(got.status).toBe(302);
    expect(got.headers.get('location')).toBe('/elsewhere');
    expect(seen.length).toBe(before + 1);
  });

  it('refuses a target its guard refuses, permanently, and connects where it allows', async () => {
    answer = (res) => sendJson(res, 200, { ok: true });
    const port = Number(new URL(server.url).port);
    const guard = { check: (ip: string, p: number) => (ip === '127.0.0.1' && p === port ? 'no' : undefined) };
    const error = await rejection(client().send({ url: url(), guard }));
    expect(error).toMatchObject({ failure: 'refused', kind: 'permanent', refusal: 'no' });
    expect(error.message).toBe('testing: refused: no');
    const named = await rejection(
      client().send({
        url: `http://named.test:${port}/x`,
        guard: { ...guard, resolve: (_name, done) => done(null, [{ address: '127.0.0.1', family: 4 }]) },
      }),
    );
    expect(named).toMatchObject({ failure: 'refused', refusal: 'named.test resolves to no' });
    const allowed = await client().send({ url: url(), guard: { check: () => undefined } });
    expect(allowed.json).toEqual({ ok: true });
  });

  it('keeps the status and headers of an answer whose body ran out of time', async () => {
    answer = (res) => {
      res.writeHead(503, { 'retry-after': '2' });
      res.write('partial');
    };
    const error = await rejection(client({ timeoutMs: 150 }).send({ url: url() }));
    expect(error).toMatchObject({ failure: 'timeout', answer: { status: 503 } });
    expect(error.answer?.headers.get('retry-after')).toBe('2');
  });
});

describe('expectOk', () => {
  it('returns a 2xx answer', async () => {
    answer = (res) => sendJson(res, 201, { id: 'p1' });
    expect((await client().expectOk({ url: url(), json: {} })).json).toEqual({ id: 'p1' });
  });

  it.each([
    [429, 'temporary'],
    [503, 'temporary'],
    [408, 'temporary'],
    [400, 'permanent'],
    [401, 'permanent'],
    [404, 'permanent'],
  ] as const)('classifies HTTP %i as %s', async (status, kind) => {
    answer = (res) => sendJson(res, status, { error: 'nope' });
    const error = await rejection(client().expectOk({ url: url(), json: {} }));
    expect(error).toMatchObject({ failure: 'status', kind, status });
  });

  it('reads Retry-After as seconds and as an HTTP date', async () => {
    answer = (res) => sendJson(res, 429, {}, { 'retry-after': '7' });
    expect((await rejection(client().expectOk({ url: url() }))).retryAfterMs).toBe(7000);
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    answer = (res) => sendJson(res, 503, {}, { 'retry-after': 'Thu, 01 Jan 2026 12:00:30 GMT' });
    const error = await rejection(client({ now: () => now }).expectOk({ url: url() }));
    expect(error.retryAfterMs).toBe(30_000);
  });

  it('quotes the body or the caller’s reading of it, with every secret redacted', async () => {
    answer = (res) => sendText(res, 401, `<html>token ${TOKEN} is not valid</html>`);
    const quoted = await rejection(client().expectOk({ url: url() }));
    expect(quoted.message).toBe('testing: 401 <html>token [redacted] is not valid</html>');
    answer = (res) => sendJson(res, 400, { error: { message: `bad key ${TOKEN}` } });
    const read = await rejection(
      client().expectOk(
        { url: url() },
        undefined,
        (a) => (a.json?.error as { message?: string } | undefined)?.message,
      ),
    );
    expect(read.message).toBe('testing: 400 bad key [redacted]');
  });

  it("applies the caller's own scrubbing after the secrets", async () => {
    answer = (res) => sendText(res, 403, 'see https://x/?token=abc123');
    const scrubbing = createOutboundClient({
      label: 'testing',
      redact: (text) => text.replace(/token=[^&\s]+/g, 'token=<redacted>'),
    });
    const error = await rejection(scrubbing.expectOk({ url: url() }));
    expect(error.message).toBe('testing: 403 see https://x/?token=<redacted>');
  });
});

describe('helpers', () => {
  it('classifyStatus', () => {
    expect([200, 204, 408, 425, 429, 500, 599, 400, 403, 404, 413].map(classifyStatus)).toEqual([
      'ok',
      'ok',
      'temporary',
      'temporary',
      'temporary',
      'temporary',
      'temporary',
      'permanent',
      'permanent',
      'permanent',
      'permanent',
    ]);
  });

  it('retryAfterMs takes the first usable hint: body seconds, header seconds, HTTP date', () => {
    const now = Date.UTC(2026, 0, 1, 0, 0, 0);
    expect(retryAfterMs([1.25, '9'])).toBe(1250);
    expect(retryAfterMs([undefined, '', ' 3 '])).toBe(3000);
    expect(retryAfterMs(['Thu, 01 Jan 2026 00:00:05 GMT'], now)).toBe(5000);
    expect(retryAfterMs(['Wed, 31 Dec 2025 23:00:00 GMT'], now)).toBe(0);
    expect(retryAfterMs([-1, 'soon', '-5', null])).toBeUndefined();
  });

  it('redactor removes the longest secret first and ignores empty ones', () => {
    const scrub = redactor('abc', 'abcdef', '', undefined);
    expect(scrub('x abcdef y abc z')).toBe('x [redacted] y [redacted] z');
  });
});
