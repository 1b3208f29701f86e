/**
 * Over-long paths (docs/errors.md): a path segment longer than 4,608 characters as sent is
 * `414 uri_too_long` wherever it is — an unknown path, under a route, on a hook path before
 * the token or the hook name is looked at — and no answer repeats more than a bounded
 * prefix of what the request sent: a 404's path, a hook's or a run's name. Over a real
 * socket and through Fastify's inject().
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_MAX_CHARS } from '../../src/http/errors.js';
import { MAX_PARAM_LENGTH } from '../../src/http/path-length.js';
import {
  ADMIN_TOKEN,
  type Answer,
  HOOK_TOKEN,
  startTestGateway,
  type TestGateway,
} from '../helpers/gateway.js';
import { expectError, listEvents } from './support.js';

const LONG = 'z'.repeat(5_000);
const TOO_LONG = {
  ok: false,
  error: `a path segment exceeds ${MAX_PARAM_LENGTH} characters`,
  code: 'uri_too_long',
};

/** The request's own text may come back only as a prefix: never this many of its characters. */
const ECHO_LIMIT = 'z'.repeat(ECHO_MAX_CHARS + 1);

async function request(gw: TestGateway, path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(`${gw.url}${path}`, init);
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, text, body } as Answer;
}

const hookPost = (body: unknown = { text: 'x' }) => ({
  method: 'POST',
  headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

describe('over-long paths', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it('answers 414 for a long segment anywhere, over a real socket, without echoing it', async () => {
    const cases: [string, RequestInit][] = [
      [`/${LONG}`, {}],
      [`/${LONG}`, { method: 'POST', body: '{}' }],
      [`/api/${LONG}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }],
      [`/api/runs/x/${LONG}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }],
      [`/api/runs/${LONG}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }],
      [`/healthz/${LONG}`, {}],
      [`/ui/${LONG}`, {}],
      [`/a/b/${LONG}/c`, {}],
      // Hook paths: before the token, the method and the hook name.
      [`/hooks/${LONG}`, hookPost()],
      [`/hooks/${LONG}`, { method: 'POST', body: '{}' }],
      [`/hooks/${LONG}`, {}],
      [`/hooks/wake/${LONG}`, hookPost()],
      [`/hooks/${LONG}?token=${HOOK_TOKEN}`, hookPost()],
      [`/hooks/runs/${LONG}`, { headers: { authorization: `Bearer ${HOOK_TOKEN}` } }],
    ];
    for (const [path, init] of cases) {
      const answer = await request(gw, path, init);
      const what = `${init.method ?? 'GET'} ${path.replace(LONG, '<5000>')}`;
      expect(answer.status, what).toBe(414);
      expectError(answer, 414, 'uri_too_long');
      expect(answer.body, what).toEqual(TOO_LONG);
    }
    expect((await listEvents(gw)).length).toBe(0);
  });

  it('a segment of exactly the limit is no 414; a long path of short segments neither; neither answer echoes it', async () => {
    const exact = 'z'.repeat(MAX_PARAM_LENGTH);
    const unknown = await request(gw, `/${exact}`);
    expectError(unknown, 404, 'not_found');
    expect(unknown.text).not.toContain(ECHO_LIMIT);
    expect(unknown.body.error).toBe(`nothing at GET /${'z'.repeat(ECHO_MAX_CHARS - 1)}…`);
    const many = await request(gw, `/${'z/'.repeat(4_000)}`);
    expectError(many, 404, 'not_found');
    expect(many.text.length).toBeLessThan(300);
    // A query is not a segment, and never echoed.
    const query = await request(gw, `/nothing?${LONG}`);
    expectError(query, 404, 'not_found');
    expect(query.body.error).toBe('nothing at GET /nothing');
  });

  it('a hook or run name is echoed as a bounded prefix only', async () => {
    const name = 'z/'.repeat(3_000);
    const hook = await request(gw, `/hooks/${name}`, hookPost());
    expectError(hook, 404, 'not_found');
    expect(hook.text.length).toBeLessThan(300);
    const runId = 'z'.repeat(MAX_PARAM_LENGTH);
    const run = await request(gw, `/hooks/runs/${runId}`, {
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    });
    expectError(run, 404, 'not_found');
    expect(run.text).not.toContain(ECHO_LIMIT);
    const admin = await request(gw, `/api/runs/${runId}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expectError(admin, 404, 'not_found');
    expect(admin.text).not.toContain(ECHO_LIMIT);
  });

  it('answers the same through inject()', async () => {
    for (const [method, url] of [
      ['GET', `/${LONG}`],
      ['POST', `/hooks/${LONG}`],
      ['GET', `/api/runs/${LONG}`],
    ] as const) {
      const answer = await gw.gateway.app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
        ...(method === 'POST' ? { payload: '{"text":"x"}' } : {}),
      });
      expect(answer.statusCode, `${method} ${url.replace(LONG, '<5000>')}`).toBe(414);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(answer.json()).toEqual(TOO_LONG);
    }
    const unknown = await gw.gateway.app.inject({ method: 'GET', url: `/${'z'.repeat(MAX_PARAM_LENGTH)}` });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).not.toContain(ECHO_LIMIT);
  });
});
