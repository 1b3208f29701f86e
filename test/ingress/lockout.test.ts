/**
 * The auth-failure lockout (docs/authentication.md): 20 failures within 60 s
 * from one client address lock it out for 60 s (the 21st attempt is 429 with
 * Retry-After); the client address is the socket peer, or — only behind a
 * trusted proxy — the first untrusted X-Forwarded-For hop read right to left.
 */
import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../faults/support/load.js';
import {
  ADMIN_TOKEN,
  type Answer,
  HOOK_TOKEN,
  startTestGateway,
  type TestGateway,
} from '../helpers/gateway.js';
import { BEARER, expectError, listEvents, postHook, requestFrom, send } from './support.js';

const MAX_FAILURES = 20;
const BAD = { authorization: 'Bearer wrong-token-0123456789abcdef0123' };

function expectLockedOut(answer: Answer): void {
  expectError(answer, 429, 'rate_limited');
  const retryAfter = answer.headers.get('retry-after') ?? '';
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
}

/** `count` failed hook requests from `client` (an X-Forwarded-For value), each of which must be 401. */
async function fail(gw: TestGateway, client: string, count: number, body: unknown = { text: 'bad' }) {
  for (let i = 0; i < count; i++) {
    const answer = await postHook(gw, 'wake', body, { ...BAD, 'x-forwarded-for': client });
    expectError(answer, 401, 'unauthorized');
  }
}

const asClient = (client: string, headers: Record<string, string> = BEARER) => ({
  ...headers,
  'x-forwarded-for': client,
});

describe('lockout behind a trusted proxy (X-Forwarded-For believed from 127.0.0.1)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ gateway: { trustedProxies: ['127.0.0.1'] } });
  });
  afterAll(() => gw.stop());

  it('answers failures 1–20 with 401 and the 21st attempt with 429 + Retry-After', async () => {
    const client = '198.51.100.1';
    await fail(gw, client, MAX_FAILURES);
    expectLockedOut(await postHook(gw, 'wake', { text: 'bad' }, asClient(client, BAD)));
  });

  it('refuses a locked-out address even with a valid token (both carriers, admin API too)', async () => {
    const client = '198.51.100.2';
    await fail(gw, client, MAX_FAILURES);
    expectLockedOut(await postHook(gw, 'wake', { text: 'valid during lockout' }, asClient(client)));
    expectLockedOut(
      await postHook(
        gw,
        'agent',
        { message: 'valid during lockout' },
        asClient(client, { 'x-agentgate-token': HOOK_TOKEN }),
      ),
    );
    expectLockedOut(
      await send(gw, '/api/runs/x', {
        method: 'GET',
        headers: asClient(client, { authorization: `Bearer ${ADMIN_TOKEN}` }),
      }),
    );
    const events = await listEvents(gw);
    expect(events.map((e) => e.text)).not.toContain('valid during lockout');
  });

  it('checks the lockout after the query token and method, before the hook name', async () => {
    const client = '198.51.100.3';
    await fail(gw, client, MAX_FAILURES);
    expectError(
      await send(gw, `/hooks/wake?token=${HOOK_TOKEN}`, { headers: asClient(client), body: '{"text":"x"}' }),
      400,
      'token_in_query',
    );
    const get = await send(gw, '/hooks/wake', { method: 'GET', headers: asClient(client) });
    expectError(get, 405, 'method_not_allowed');
    expectLockedOut(await postHook(gw, 'no-such-hook', { text: 'x' }, asClient(client)));
  });

  it('does not affect a second client address', async () => {
    const locked = '198.51.100.4';
    await fail(gw, locked, MAX_FAILURES);
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(locked)));
    const other = await postHook(gw, 'wake', { text: 'other client is fine' }, asClient('198.51.100.5'));
    expect(other.status, other.text).toBe(200);
    const direct = await gw.hook('wake', { text: 'the proxy itself is fine' });
    expect(direct.status).toBe(200);
  });

  it('resets the count on a success before the lockout', async () => {
    const client = '198.51.100.6';
    await fail(gw, client, MAX_FAILURES - 1);
    const ok = await postHook(gw, 'wake', { text: 'success resets' }, asClient(client));
    expect(ok.status, ok.text).toBe(200);
    await fail(gw, client, MAX_FAILURES);
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(client)));
  });

  it('does not count query-string tokens (400)', async () => {
    const client = '198.51.100.7';
    for (let i = 0; i < 30; i++) {
      const answer = await send(gw, '/hooks/wake?token=wrong', {
        headers: asClient(client, BAD),
        body: '{"text":"x"}',
      });
      expectError(answer, 400, 'token_in_query');
    }
    await fail(gw, client, MAX_FAILURES - 1);
    const ok = await postHook(gw, 'wake', { text: 'query tokens did not count' }, asClient(client));
    expect(ok.status, ok.text).toBe(200);
  });

  it('counts admin API failures together with hook failures', async () => {
    const client = '198.51.100.8';
    for (let i = 0; i < MAX_FAILURES / 2; i++) {
      const answer = await send(gw, '/api/runs/x', {
        method: 'GET',
        headers: asClient(client, { authorization: 'Bearer wrong-admin-token' }),
      });
      expectError(answer, 401, 'unauthorized');
    }
    await fail(gw, client, MAX_FAILURES / 2);
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(client)));
  });

  it('counts the hook token presented to the admin API as a failure', async () => {
    const client = '198.51.100.9';
    for (let i = 0; i < MAX_FAILURES; i++) {
      const answer = await send(gw, '/api/sessions/agent:main:main/events', {
        method: 'GET',
        headers: asClient(client, { authorization: `Bearer ${HOOK_TOKEN}` }),
      });
      expectError(answer, 401, 'unauthorized');
    }
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(client)));
  });

  it('counts 401s for unknown hook names', async () => {
    const client = '198.51.100.10';
    for (let i = 0; i < MAX_FAILURES; i++) {
      expectError(await postHook(gw, `nope-${i}`, {}, asClient(client, BAD)), 401, 'unauthorized');
    }
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(client)));
  });

  it('takes the first untrusted hop read right to left; spoofed left-most entries do not help', async () => {
    const client = '203.0.113.7';
    for (let i = 0; i < MAX_FAILURES; i++) {
      // Whatever the client writes on the left, the proxy appends the real address on the right.
      const answer = await postHook(
        gw,
        'wake',
        { text: 'x' },
        { ...BAD, 'x-forwarded-for': `10.0.0.${i}, ${client}` },
      );
      expectError(answer, 401, 'unauthorized');
    }
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(client)));
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(`192.0.2.99, ${client}`)));
    // A trusted hop (127.0.0.1) on the right is skipped: the client is still 203.0.113.7.
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(`${client}, 127.0.0.1`)));
    // The left-most entries were never the client: they are not locked.
    const spoofed = await postHook(gw, 'wake', { text: 'left-most entry not locked' }, asClient('10.0.0.3'));
    expect(spoofed.status, spoofed.text).toBe(200);
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    // 127.0.0.3 is not in trustedProxies: its header is not believed, the socket peer counts.
    for (let i = 0; i < MAX_FAILURES; i++) {
      const answer = await requestFrom(gw, '127.0.0.3', '/hooks/wake', {
        headers: { ...BAD, 'x-forwarded-for': `192.0.2.${i}`, 'content-type': 'application/json' },
        body: '{"text":"x"}',
      });
      expect(answer.status).toBe(401);
    }
    const locked = await requestFrom(gw, '127.0.0.3', '/hooks/wake', {
      headers: { ...BEARER, 'x-forwarded-for': '192.0.2.200' },
      body: '{"text":"x"}',
    });
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe('rate_limited');
    expect(Number(locked.headers['retry-after'])).toBeLessThanOrEqual(60);
    // The addresses it claimed were never counted.
    const claimed = await postHook(gw, 'wake', { text: 'claimed address fine' }, asClient('192.0.2.1'));
    expect(claimed.status, claimed.text).toBe(200);
  });
});

describe('a lockout survives an address flood; IPv6 counts by /64', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ gateway: { trustedProxies: ['127.0.0.1'] } });
  });
  afterAll(() => gw.stop());

  /** One failed guess from each of `addresses` over 32 keep-alive connections; every answer must be 401. */
  async function failOnceEach(addresses: string[], parallel = 32): Promise<void> {
    const agent = new Agent({ keepAlive: true, maxSockets: parallel });
    const statuses = new Map<number, number>();
    let next = 0;
    try {
      await Promise.all(
        Array.from({ length: parallel }, async () => {
          while (next < addresses.length) {
            const client = addresses[next++] as string;
            const { status } = await post(
              agent,
              gw.url,
              '/hooks/wake',
              '{"text":"flood"}',
              asClient(client, BAD),
            );
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
          }
        }),
      );
    } finally {
      agent.destroy();
    }
    expect(Object.fromEntries(statuses)).toEqual({ 401: addresses.length });
  }

  it('keeps an address locked while 10,050 other addresses (IPv4 and IPv6 /64s) fail once each', async () => {
    const locked = '203.0.113.50';
    await fail(gw, locked, MAX_FAILURES);
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, asClient(locked, BAD)));
    // More than the 10,000 counted addresses the gateway keeps, so shedding must happen.
    const others = Array.from({ length: 10_050 }, (_, i) =>
      i % 2 === 0
        ? `10.${(i >> 16) & 0xff}.${(i >> 8) & 0xff}.${i & 0xff}`
        : `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`,
    );
    await failOnceEach(others);
    expectLockedOut(await postHook(gw, 'wake', { text: 'after the flood' }, asClient(locked, BAD)));
    expectLockedOut(await postHook(gw, 'wake', { text: 'after the flood' }, asClient(locked)));
    const events = await listEvents(gw);
    expect(events.map((e) => e.text)).not.toContain('after the flood');
  }, 60_000);

  it('locks the whole /64 of an IPv6 client that changes its interface id on every guess', async () => {
    for (let i = 0; i < MAX_FAILURES; i++) {
      const answer = await postHook(
        gw,
        'wake',
        { text: 'x' },
        asClient(`2001:db8:abcd:1:${i.toString(16)}::7`, BAD),
      );
      expectError(answer, 401, 'unauthorized');
    }
    expectLockedOut(
      await postHook(gw, 'wake', { text: 'x' }, asClient('2001:db8:abcd:1:ffff:ffff:ffff:fffe')),
    );
    const neighbour = await postHook(
      gw,
      'wake',
      { text: 'next /64 is fine' },
      asClient('2001:db8:abcd:2::7'),
    );
    expect(neighbour.status, neighbour.text).toBe(200);
  });
});

describe('lockout without trusted proxies (X-Forwarded-For ignored)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it('counts every request for the socket peer, whatever X-Forwarded-For says', async () => {
    for (let i = 0; i < MAX_FAILURES; i++) {
      const answer = await postHook(
        gw,
        'wake',
        { text: 'x' },
        { ...BAD, 'x-forwarded-for': `203.0.113.${i}` },
      );
      expectError(answer, 401, 'unauthorized');
    }
    expectLockedOut(
      await postHook(gw, 'wake', { text: 'x' }, { ...BEARER, 'x-forwarded-for': '198.51.100.77' }),
    );
    expectLockedOut(await postHook(gw, 'wake', { text: 'x' }, BEARER));
  });

  it('does not affect a second socket address', async () => {
    for (let i = 0; i < MAX_FAILURES; i++) {
      const answer = await requestFrom(gw, '127.0.0.4', '/hooks/wake', {
        headers: BAD,
        body: '{"text":"x"}',
      });
      expect(answer.status).toBe(401);
    }
    const locked = await requestFrom(gw, '127.0.0.4', '/hooks/wake', {
      headers: BEARER,
      body: '{"text":"x"}',
    });
    expect(locked.status).toBe(429);
    const other = await requestFrom(gw, '127.0.0.2', '/hooks/wake', {
      headers: { ...BEARER, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'from the second address' }),
    });
    expect(other.status).toBe(200);
    expect(other.body).toMatchObject({ ok: true, eventOutcome: 'queued' });
    const events = await requestFrom(gw, '127.0.0.2', '/api/sessions/agent:main:main/events', {
      method: 'GET',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(events.status).toBe(200);
    expect(events.body.events.map((e: { text: string }) => e.text)).toEqual(['from the second address']);
  });
});
