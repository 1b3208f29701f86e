/**
 * The error rows of docs/errors.md, over real
 * HTTP, in that order, plus the token carriers, Content-Type independence and
 * the admin/hook token split.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { BEARER, expectError, expectInvalidPayload, listEvents, postHook, send } from './support.js';

const LIMIT = 1024;

describe('ingress errors', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ hooks: { maxBodyBytes: LIMIT } });
  });
  afterAll(() => gw.stop());
  // Many tests here fail authentication on purpose; an authenticated admin call
  // resets the per-address failure count so the lockout never interferes.
  afterEach(async () => {
    const reset = await gw.admin('/api/runs/none');
    expect(reset.status).toBe(404);
  });

  describe('400 token_in_query', () => {
    it.each([
      ['a valid token in the query and header', `?token=${HOOK_TOKEN}`, BEARER],
      ['a wrong token in the query, valid header', '?token=nope', BEARER],
      ['an empty token parameter', '?token=', BEARER],
      ['token among other parameters', '?a=1&token=x&b=2', BEARER],
      ['no header at all', `?token=${HOOK_TOKEN}`, {}],
    ])('rejects %s', async (_label, query, headers) => {
      const answer = await send(gw, `/hooks/wake${query}`, {
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ text: 'query token' }),
      });
      expectError(answer, 400, 'token_in_query');
    });

    it('stores nothing for a rejected query-token request', async () => {
      await send(gw, `/hooks/wake?token=${HOOK_TOKEN}`, {
        headers: BEARER,
        body: JSON.stringify({ text: 'must not be stored (query token)' }),
      });
      const events = await listEvents(gw);
      expect(events.map((e) => e.text)).not.toContain('must not be stored (query token)');
    });

    it('is also refused on the admin API', async () => {
      const answer = await send(gw, `/api/runs/x?token=${ADMIN_TOKEN}`, {
        method: 'GET',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expectError(answer, 400, 'token_in_query');
    });

    it('precedes 405: GET with a query token is 400', async () => {
      const answer = await send(gw, `/hooks/wake?token=${HOOK_TOKEN}`, { method: 'GET', headers: BEARER });
      expectError(answer, 400, 'token_in_query');
    });

    it('precedes 405 for an unusual method too', async () => {
      const answer = await send(gw, `/hooks/wake?token=${HOOK_TOKEN}`, {
        method: 'PROPFIND',
        headers: BEARER,
      });
      expectError(answer, 400, 'token_in_query');
    });

    it('precedes 401 and 404: unknown hook, no header, query token is 400', async () => {
      const answer = await send(gw, '/hooks/nope?token=x', { body: '{}' });
      expectError(answer, 400, 'token_in_query');
    });
  });

  describe('405 method_not_allowed', () => {
    it.each(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])(
      'answers %s with 405 and Allow: POST',
      async (method) => {
        const answer = await send(gw, '/hooks/wake', {
          method,
          headers: BEARER,
          body: method === 'GET' ? undefined : JSON.stringify({ text: 'x' }),
        });
        expectError(answer, 405, 'method_not_allowed');
        expect(answer.headers.get('allow')).toBe('POST');
      },
    );

    it('answers HEAD with 405 and Allow: POST (no body)', async () => {
      const answer = await send(gw, '/hooks/wake', { method: 'HEAD', headers: BEARER });
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe('POST');
    });

    it('answers an unusual method with 405 and Allow: POST', async () => {
      const answer = await send(gw, '/hooks/wake', { method: 'PROPFIND', headers: BEARER });
      expectError(answer, 405, 'method_not_allowed');
      expect(answer.headers.get('allow')).toBe('POST');
    });

    it('precedes 401: GET without a token is 405', async () => {
      const answer = await send(gw, '/hooks/wake', { method: 'GET' });
      expectError(answer, 405, 'method_not_allowed');
      expect(answer.headers.get('allow')).toBe('POST');
    });

    it('precedes 404: GET on an unknown hook name is 405', async () => {
      const answer = await send(gw, '/hooks/does-not-exist', { method: 'GET', headers: BEARER });
      expectError(answer, 405, 'method_not_allowed');
    });

    it('does not count toward the auth-failure lockout', async () => {
      for (let i = 0; i < 25; i++) {
        const answer = await send(gw, '/hooks/wake', {
          method: 'GET',
          headers: { authorization: 'Bearer wrong' },
        });
        expect(answer.status).toBe(405);
      }
      const ok = await gw.hook('wake', { text: 'after many 405s' });
      expect(ok.status).toBe(200);
    });
  });

  describe('401 unauthorized', () => {
    it.each<[string, Record<string, string>]>([
      ['no token at all', {}],
      ['a wrong bearer token', { authorization: 'Bearer wrong-token-0123456789abcdef' }],
      ['a wrong x-agentgate-token', { 'x-agentgate-token': 'wrong-token-0123456789abcdef' }],
      ['an empty bearer', { authorization: 'Bearer ' }],
      ['the token without the Bearer scheme', { authorization: HOOK_TOKEN }],
      ['the token with the Basic scheme', { authorization: `Basic ${HOOK_TOKEN}` }],
      ['a prefix of the token', { authorization: `Bearer ${HOOK_TOKEN.slice(0, -1)}` }],
      ['the token plus one character', { authorization: `Bearer ${HOOK_TOKEN}x` }],
      ['the token in upper case', { authorization: `Bearer ${HOOK_TOKEN.toUpperCase()}` }],
      ['the token in a generic x-gateway-token header', { 'x-gateway-token': HOOK_TOKEN }],
      ['the admin token as bearer', { authorization: `Bearer ${ADMIN_TOKEN}` }],
      ['the admin token in x-agentgate-token', { 'x-agentgate-token': ADMIN_TOKEN }],
    ])('rejects %s', async (_label, headers) => {
      const answer = await postHook(gw, 'wake', { text: 'unauthorized attempt' }, headers);
      expectError(answer, 401, 'unauthorized');
    });

    it('stores nothing for an unauthorized request', async () => {
      await postHook(gw, 'wake', { text: 'must not be stored (401)' }, { authorization: 'Bearer wrong' });
      await postHook(gw, 'agent', { message: 'must not run (401)' }, { authorization: 'Bearer wrong' });
      const events = await listEvents(gw);
      expect(events.map((e) => e.text)).not.toContain('must not be stored (401)');
    });

    it('precedes 404: an unknown hook name with a bad token is 401', async () => {
      const answer = await postHook(gw, 'nope', { text: 'x' }, { authorization: 'Bearer wrong' });
      expectError(answer, 401, 'unauthorized');
    });

    it('precedes 413: an oversized body with a bad token is 401', async () => {
      const answer = await postHook(
        gw,
        'wake',
        { text: 'x'.repeat(LIMIT * 4) },
        { authorization: 'Bearer wrong' },
      );
      expectError(answer, 401, 'unauthorized');
    });

    it('precedes invalid_json: a broken body without a token is 401', async () => {
      const answer = await postHook(gw, 'wake', '{not json');
      expectError(answer, 401, 'unauthorized');
    });

    it.each<[string, Record<string, string>]>([
      ['the hook token as bearer', { authorization: `Bearer ${HOOK_TOKEN}` }],
      ['the hook token in x-agentgate-token', { 'x-agentgate-token': HOOK_TOKEN }],
      ['the admin token in x-agentgate-token', { 'x-agentgate-token': ADMIN_TOKEN }],
      ['no token', {}],
    ])('the admin API refuses %s', async (_label, headers) => {
      const answer = await send(gw, '/api/runs/some-run', { method: 'GET', headers });
      expectError(answer, 401, 'unauthorized');
    });
  });

  describe('token carriers', () => {
    it('accepts Authorization: Bearer', async () => {
      const answer = await postHook(gw, 'wake', { text: 'via bearer' }, BEARER);
      expect(answer.status).toBe(200);
    });

    it('accepts x-agentgate-token', async () => {
      const answer = await postHook(
        gw,
        'wake',
        { text: 'via x-agentgate-token' },
        { 'x-agentgate-token': HOOK_TOKEN },
      );
      expect(answer.status).toBe(200);
      const agent = await postHook(
        gw,
        'agent',
        { message: 'via header' },
        { 'x-agentgate-token': HOOK_TOKEN },
      );
      expect(agent.status).toBe(202);
    });

    it('accepts the Bearer scheme case-insensitively', async () => {
      const answer = await postHook(
        gw,
        'wake',
        { text: 'via lower-case bearer' },
        { authorization: `bearer ${HOOK_TOKEN}` },
      );
      expect(answer.status).toBe(200);
    });

    it('the admin API accepts the gateway token', async () => {
      const answer = await gw.admin('/api/sessions/agent:main:main/events');
      expect(answer.status).toBe(200);
      expect(Array.isArray(answer.body.events)).toBe(true);
    });
  });

  describe('404 not_found', () => {
    it.each(['nope', 'WAKE', 'Agent', 'wake/extra', 'agent/', 'wake%20', '..%2Fapi'])(
      'answers an unknown hook name %j with 404',
      async (name) => {
        const answer = await postHook(gw, name, { text: 'x', message: 'x' }, BEARER);
        expectError(answer, 404, 'not_found');
      },
    );

    it('answers POST to the bare hooks path with 404', async () => {
      const answer = await send(gw, '/hooks', { headers: BEARER, body: '{"text":"x"}' });
      expectError(answer, 404, 'not_found');
    });

    it('precedes 413: an oversized body to an unknown hook is 404', async () => {
      const answer = await postHook(gw, 'nope', { text: 'x'.repeat(LIMIT * 4) }, BEARER);
      expectError(answer, 404, 'not_found');
    });

    it('precedes invalid_json: a broken body to an unknown hook is 404', async () => {
      const answer = await postHook(gw, 'nope', '{not json', BEARER);
      expectError(answer, 404, 'not_found');
    });

    it('answers unknown non-hook paths with the same JSON error shape', async () => {
      const answer = await send(gw, '/no/such/thing', { method: 'GET' });
      expectError(answer, 404, 'not_found');
    });
  });

  describe('413 payload_too_large (simple case; see body-limits.test.ts)', () => {
    it('rejects a body over hooks.maxBodyBytes', async () => {
      const answer = await postHook(gw, 'wake', { text: 'y'.repeat(LIMIT + 1) }, BEARER);
      expectError(answer, 413, 'payload_too_large');
    });

    it('precedes invalid_json: an oversized non-JSON body is 413', async () => {
      const answer = await postHook(gw, 'wake', '{'.repeat(LIMIT + 10), BEARER);
      expectError(answer, 413, 'payload_too_large');
    });
  });

  describe('400 invalid_json', () => {
    it.each([
      ['an empty body', ''],
      ['whitespace only', '   \n'],
      ['truncated JSON', '{"text":"x"'],
      ['not JSON at all', 'text=hello'],
      ['an array', '[{"text":"x"}]'],
      ['an empty array', '[]'],
      ['a string', '"hello"'],
      ['a number', '42'],
      ['true', 'true'],
      ['null', 'null'],
      ['two objects', '{"text":"a"}{"text":"b"}'],
      ['JSON5-only syntax', "{text: 'x'}"],
    ])('rejects %s on /wake', async (_label, body) => {
      const answer = await postHook(gw, 'wake', body, BEARER);
      expectError(answer, 400, 'invalid_json');
    });

    it.each([
      ['an empty body', ''],
      ['an array', '[]'],
      ['a string', '"hello"'],
      ['a number', '1'],
      ['null', 'null'],
    ])('rejects %s on /agent', async (_label, body) => {
      const answer = await postHook(gw, 'agent', body, BEARER);
      expectError(answer, 400, 'invalid_json');
    });

    it('rejects an empty body sent without Content-Type or Content-Length', async () => {
      const answer = await send(gw, '/hooks/wake', { headers: BEARER });
      expectError(answer, 400, 'invalid_json');
    });

    it('rejects an empty body sent without Content-Type', async () => {
      const answer = await send(gw, '/hooks/wake', { headers: BEARER, body: Buffer.alloc(0) });
      expectError(answer, 400, 'invalid_json');
    });

    it('precedes invalid_payload: broken JSON that would also lack fields is invalid_json', async () => {
      const answer = await postHook(gw, 'agent', '{"message":', BEARER);
      expectError(answer, 400, 'invalid_json');
    });
  });

  describe('Content-Type is not required', () => {
    it.each<[string, Record<string, string>]>([
      ['text/plain', { 'content-type': 'text/plain' }],
      ['application/x-www-form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['application/octet-stream', { 'content-type': 'application/octet-stream' }],
      ['application/json; charset=utf-8', { 'content-type': 'application/json; charset=utf-8' }],
      ['application/cloudevents+json', { 'content-type': 'application/cloudevents+json' }],
    ])('parses the body as JSON when labelled %s', async (label, headers) => {
      const text = `content-type ${label}`;
      const answer = await send(gw, '/hooks/wake', {
        headers: { ...BEARER, ...headers },
        body: JSON.stringify({ text }),
      });
      expect(answer.status, answer.text).toBe(200);
      const events = await listEvents(gw);
      expect(events.find((e) => e.id === answer.body.eventId)?.text).toBe(text);
    });

    it('parses the body as JSON without any Content-Type header', async () => {
      const answer = await send(gw, '/hooks/agent', {
        headers: BEARER,
        body: Buffer.from(JSON.stringify({ message: 'no content type' })),
      });
      expect(answer.status, answer.text).toBe(202);
      expect(typeof answer.body.runId).toBe('string');
    });

    it('still validates the payload of a text/plain body', async () => {
      const answer = await send(gw, '/hooks/wake', {
        headers: { ...BEARER, 'content-type': 'text/plain' },
        body: JSON.stringify({ mode: 'now' }),
      });
      expectInvalidPayload(answer, 'text');
    });
  });

  describe('unknown payload fields are ignored', () => {
    it('accepts a wake with extra fields', async () => {
      const answer = await gw.hook('wake', {
        text: 'with extras',
        extra: 1,
        nested: { deep: [1, 2, 3] },
        token: 'not-a-token',
        sessionKey: 'agent:main:main',
      });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toEqual({
        ok: true,
        mode: 'now',
        eventId: expect.any(String),
        eventOutcome: 'queued',
      });
    });

    it('accepts an agent request with extra fields', async () => {
      const answer = await gw.hook('agent', {
        message: 'with extras',
        foo: 'bar',
        priority: 9,
        labels: ['x'],
      });
      expect(answer.status, answer.text).toBe(202);
      expect(answer.body).toEqual({ ok: true, runId: expect.any(String) });
    });
  });

  describe('precedence after the body is read', () => {
    it('invalid_payload precedes policy checks (bad message and a forbidden sessionKey)', async () => {
      const answer = await gw.hook('agent', { message: '', sessionKey: 'agent:main:main' });
      expectInvalidPayload(answer, 'message');
    });

    it('session_key_not_allowed with a valid payload', async () => {
      const answer = await gw.hook('agent', { message: 'hi', sessionKey: 'hook:x' });
      expectError(answer, 400, 'session_key_not_allowed');
    });
  });
});
