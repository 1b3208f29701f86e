/**
 * The parts of completion callbacks that need no gateway: URL and origin rules,
 * Standard Webhooks signing (checked with the reference library), the retry
 * timetable, the address guard and the reading of answers.
 */
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { forbiddenTarget } from '../../src/callbacks/address-guard.js';
import { judge } from '../../src/callbacks/engine.js';
import { givesUp, MIN_RETRY_WINDOW_MS, RETRY_DELAYS_S, retryDelayMs } from '../../src/callbacks/schedule.js';
import { callbackConfigProblems } from '../../src/config/callback-rules.js';
import type { HooksConfig } from '../../src/config/schema.js';
import { checkCallbackUrl, normalisedOrigin, parseOrigin } from '../../src/http/callback-url.js';
import { signedHeaders, signingKey } from '../../src/http/webhook-signature.js';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;

describe('callback URLs and origins', () => {
  it.each([
    ['ftp://example.com/x', 'must be an absolute http(s) URL'],
    ['/relative/path', 'must be an absolute http(s) URL'],
    ['example.com/hook', 'must be an absolute http(s) URL'],
    ['not a url', 'must be an absolute http(s) URL'],
    ['javascript:alert(1)', 'must be an absolute http(s) URL'],
    ['file:///etc/passwd', 'must be an absolute http(s) URL'],
    ['https://user:pw@example.com/hook', 'must not contain user info (user:password@)'],
    ['https://user@example.com/hook', 'must not contain user info (user:password@)'],
  ])('refuses %s', (value, problem) => {
    expect(checkCallbackUrl(value)).toEqual({ ok: false, problem });
  });

  it('normalises origins: scheme, lower-case host, default port explicit', () => {
    const origin = (url: string) => normalisedOrigin(new URL(url));
    expect(origin('https://Example.COM/a?b')).toBe('https://example.com:443');
    expect(origin('https://example.com:443/')).toBe('https://example.com:443');
    expect(origin('http://example.com')).toBe('http://example.com:80');
    expect(origin('http://example.com:8080/x')).toBe('http://example.com:8080');
    expect(origin('http://[::1]:9000/x')).toBe('http://[::1]:9000');
    expect(origin('https://example.com')).not.toBe(origin('http://example.com'));
  });

  it('an allowed origin is an origin: no path, query or user info', () => {
    expect(parseOrigin('https://Example.com/')).toEqual({ ok: true, origin: 'https://example.com:443' });
    expect(parseOrigin('https://example.com/hooks').ok).toBe(false);
    expect(parseOrigin('https://example.com?x=1').ok).toBe(false);
    expect(parseOrigin('https://u:p@example.com').ok).toBe(false);
    expect(parseOrigin('example.com').ok).toBe(false);
  });
});

describe('callback configuration', () => {
  const hooks = (over: Partial<HooksConfig>) => ({ mappings: [], ...over }) as HooksConfig;

  it('requires the secret once an origin is allowed or a mapping has a callbackUrl', () => {
    expect(callbackConfigProblems(hooks({}))).toEqual([]);
    expect(callbackConfigProblems(hooks({ callbacks: { allowedOrigins: ['https://ci.example'] } }))).toEqual([
      expect.stringMatching(/^hooks\.callbacks\.secret: required once a callback is configured/),
    ]);
    const mapping = { callbackUrl: 'https://ops.example/done' } as HooksConfig['mappings'][number];
    expect(callbackConfigProblems(hooks({ mappings: [mapping] }))).toEqual([
      expect.stringMatching(/^hooks\.callbacks\.secret: required/),
    ]);
    expect(
      callbackConfigProblems(
        hooks({ mappings: [mapping], callbacks: { secret: secret(), allowedOrigins: [] } }),
      ),
    ).toEqual([]);
  });

  it('names a bad secret, a bad origin and a bad mapping callbackUrl by key', () => {
    const mapping = { callbackUrl: 'ftp://ops.example' } as HooksConfig['mappings'][number];
    const problems = callbackConfigProblems(
      hooks({
        mappings: [mapping],
        callbacks: { secret: 'not-whsec', allowedOrigins: ['https://a.example/path'] },
      }),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^hooks\.callbacks\.allowedOrigins\[0\]: must be an origin/),
      'hooks.mappings[0].callbackUrl: must be an absolute http(s) URL',
      expect.stringMatching(/^hooks\.callbacks\.secret: must be "whsec_"/),
    ]);
    expect(signingKey('whsec_c2hvcnQ=').ok).toBe(false);
  });
});

describe('Standard Webhooks signature', () => {
  it('is accepted by the reference library, and rejected with another secret or body', () => {
    const s = secret();
    const key = signingKey(s);
    if (!key.ok) throw new Error(key.problem);
    const body = JSON.stringify({ type: 'run.finished', runId: 'run_1', reply: 'ünïcode ✓' });
    const headers = signedHeaders(key.key, 'msg_1', Math.floor(Date.now() / 1000), body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(s).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(s).verify(`${body} `, headers)).toThrow();
  });
});

describe('retry timetable', () => {
  it('the first three retries each come within 30 s of the previous attempt, whatever the jitter', () => {
    for (const random of [0, 0.5, 0.999999]) {
      for (const attempts of [1, 2, 3]) {
        expect(retryDelayMs(attempts, undefined, () => random)).toBeLessThanOrEqual(30_000);
      }
    }
  });

  it('grows, keeps retrying for at least 24 h, then gives up', () => {
    const delays = RETRY_DELAYS_S.map((_, i) => retryDelayMs(i + 1, undefined, () => 0));
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1] as number);
    const total = delays.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(MIN_RETRY_WINDOW_MS);
    expect(givesUp(RETRY_DELAYS_S.length, 0, total)).toBe(false);
    expect(givesUp(RETRY_DELAYS_S.length + 1, 0, total)).toBe(true);
    // Retry-After answers may use the attempts up early: it goes on until 24 h have passed.
    expect(givesUp(RETRY_DELAYS_S.length + 5, 0, MIN_RETRY_WINDOW_MS - 1)).toBe(false);
  });

  it("honours the receiver's Retry-After (at least 1 s, at most 6 h)", () => {
    expect(retryDelayMs(1, 120_000, () => 0.9)).toBe(120_000);
    expect(retryDelayMs(1, 0, () => 0)).toBe(1000);
    expect(retryDelayMs(1, 10 * 24 * 3600_000, () => 0)).toBe(6 * 3600_000);
  });
});

describe('address guard', () => {
  const self = [{ host: '127.0.0.1', port: 18790 }];

  it.each([
    '169.254.169.254',
    '169.254.0.1',
    '::ffff:169.254.169.254',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'fd00:ec2::254',
  ])('refuses the link-local or metadata address %s on any port', (ip) => {
    expect(forbiddenTarget(ip, 80, self)).toMatch(/link-local or cloud metadata/);
  });

  it.each(['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', '0.0.0.0', '::'])(
    "refuses %s on the gateway's own port",
    (ip) => {
      expect(forbiddenTarget(ip, 18790, self)).toMatch(/the gateway's own listener/);
    },
  );

  it("refuses this host's interface addresses on the gateway's port, and allows other ports and hosts", () => {
    const addresses = Object.values(networkInterfaces())
      .flat()
      .map((entry) => entry?.address)
      .filter((address): address is string => !!address);
    for (const address of addresses) {
      expect(forbiddenTarget(address, 18790, [{ host: '0.0.0.0', port: 18790 }])).toBeDefined();
    }
    expect(forbiddenTarget('127.0.0.1', 18791, self)).toBeUndefined();
    expect(forbiddenTarget('93.184.216.34', 18790, self)).toBeUndefined();
    expect(forbiddenTarget('fd00:ec2::253', 443, self)).toBeUndefined();
  });
});

describe('reading answers', () => {
  it('2xx delivers; 408, 429, 5xx and network failures are temporary; other answers end it', () => {
    expect(judge({ kind: 'answer', status: 204 })).toEqual({ kind: 'delivered' });
    for (const status of [408, 429, 500, 503, 599]) {
      expect(judge({ kind: 'answer', status, retryAfterMs: 3000 })).toMatchObject({
        kind: 'temporary',
        retryAfterMs: 3000,
      });
    }
    expect(judge({ kind: 'network', reason: 'request failed (ECONNREFUSED)' }).kind).toBe('temporary');
    for (const status of [400, 401, 404, 410, 425])
      expect(judge({ kind: 'answer', status }).kind).toBe('permanent');
    expect(judge({ kind: 'answer', status: 302 })).toEqual({
      kind: 'permanent',
      reason: 'HTTP 302: redirects are not followed',
    });
    expect(judge({ kind: 'refused', reason: 'x' }).kind).toBe('permanent');
  });
});
