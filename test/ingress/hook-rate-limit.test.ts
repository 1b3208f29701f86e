/**
 * Per-hook request rates (docs/callers.md, "Per-hook limits") over real HTTP:
 * `hooks.rateLimit` for /wake and /agent together, `rateLimit` on a mapping for
 * its hook; over the limit an authenticated request is 429 `hook_rate_limited`
 * with Retry-After and nothing is stored. Per hook for all callers together;
 * refused requests do not use it up; checked after the hook name is known and
 * before the body is read. And every bad value of the new config keys, named by
 * its key.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import {
  ADMIN_TOKEN,
  type Answer,
  HOOK_TOKEN,
  startTestGateway,
  type TestGateway,
  tempDir,
} from '../helpers/gateway.js';
import { BEARER, expectError, postHook, RawClient } from './support.js';

const BAD = { authorization: 'Bearer wrong-token-0123456789abcdef0123' };
const from = (client: string, headers: Record<string, string> = BEARER) => ({
  ...headers,
  'x-forwarded-for': client,
});

function expectRateLimited(answer: Answer, maxRetryAfter = 60): number {
  expectError(answer, 429, 'hook_rate_limited');
  const retryAfter = answer.headers.get('retry-after') ?? '';
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(maxRetryAfter);
  return Number(retryAfter);
}

describe('per-hook request rates', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      gateway: { trustedProxies: ['127.0.0.1'] },
      hooks: {
        rateLimit: { perMinute: 3 },
        mappings: [
          { id: 'limited', match: { path: 'limited' }, rateLimit: { perMinute: 2 }, messageTemplate: 'l' },
          {
            id: 'per-second',
            match: { path: 'per-second' },
            rateLimit: { perMinute: 60 },
            textTemplate: 's',
            action: 'wake',
          },
          { id: 'body', match: { path: 'body' }, rateLimit: { perMinute: 1 }, messageTemplate: 'b' },
          { id: 'free', match: { path: 'free' }, messageTemplate: 'f' },
        ],
      },
    });
  });
  afterAll(() => gw.stop());

  const stored = () => {
    const db = new Database(join(gw.dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      const count = (table: string) =>
        (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
      return { runs: count('runs'), events: count('events') };
    } finally {
      db.close();
    }
  };

  it('/wake and /agent share hooks.rateLimit; over it: 429 with Retry-After, nothing stored, for every caller', async () => {
    expect((await postHook(gw, 'wake', { text: 'one' }, from('198.51.100.1'))).status).toBe(200);
    expect(
      (await postHook(gw, 'agent', { message: 'two', deliver: false }, from('198.51.100.2'))).status,
    ).toBe(202);
    expect((await postHook(gw, 'wake', { text: 'three' }, from('198.51.100.3'))).status).toBe(200);
    const before = stored();
    // One token per 20 s: the next is 17–20 s away.
    const retryAfter = expectRateLimited(
      await postHook(gw, 'agent', { message: 'four', deliver: false }, from('198.51.100.1')),
      20,
    );
    expect(retryAfter).toBeGreaterThanOrEqual(15);
    expectRateLimited(await postHook(gw, 'wake', { text: 'five' }, from('198.51.100.9')));
    expect(stored()).toEqual(before);
    // A mapping's hook is not limited by hooks.rateLimit.
    expect((await postHook(gw, 'free', {}, from('198.51.100.1'))).status).toBe(202);
  });

  it('a mapping has its own limit; bad tokens (401) and unknown hooks (404) come first and use none of it', async () => {
    for (let i = 0; i < 3; i++) {
      expectError(await postHook(gw, 'limited', {}, from('198.51.100.20', BAD)), 401, 'unauthorized');
      expectError(await postHook(gw, 'no-such-hook', {}, from('198.51.100.21')), 404, 'not_found');
    }
    expect((await postHook(gw, 'limited', {}, from('198.51.100.21'))).status).toBe(202);
    expect((await postHook(gw, 'limited', {}, from('198.51.100.22'))).status).toBe(202);
    expectRateLimited(await postHook(gw, 'limited', {}, from('198.51.100.23')));
    // Still in the same order when the bucket is empty: 401 before 429.
    expectError(await postHook(gw, 'limited', {}, from('198.51.100.24', BAD)), 401, 'unauthorized');
  });

  it('refused requests do not use it up: while refusals go on, the refill still gets through on time', async () => {
    const hit = () => postHook(gw, 'per-second', {}, from('198.51.100.30'));
    // Empty the bucket: a minute's worth (60) at least, then the first refusal.
    let accepted = 0;
    while ((await hit()).status === 200) accepted++;
    expect(accepted).toBeGreaterThanOrEqual(60);
    expect(accepted).toBeLessThan(200);
    // Keep asking for 2.5 s: the refill (one token a second) is taken by whoever asks next.
    let ok = 0;
    let refused = 0;
    const until = Date.now() + 2500;
    while (Date.now() < until) {
      const answer = await hit();
      if (answer.status === 200) ok++;
      else {
        expectRateLimited(answer, 1);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(5);
    expect(ok).toBeGreaterThanOrEqual(2);
    expect(ok).toBeLessThanOrEqual(4);
  });

  it('is checked before the body is read: over the limit, a request whose body never comes is answered 429', async () => {
    expect((await postHook(gw, 'body', {}, BEARER)).status).toBe(202);
    const client = await RawClient.open(gw);
    try {
      // Headers only: a body of 1 MB is announced and never sent.
      await client.write(RawClient.head('/hooks/body', { 'Content-Length': 1_000_000 }));
      const response = await client.response(5000);
      expect(response.status).toBe(429);
      expect(response.json).toMatchObject({ ok: false, code: 'hook_rate_limited' });
      expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    } finally {
      client.socket.destroy();
    }
    // Not even parsed: invalid JSON is refused for the rate, not the JSON.
    expectRateLimited(await postHook(gw, 'body', '{not json', BEARER));
  });
});

describe('config keys of the per-hook limits, every bad value named by its key', () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir('agentgate-limits-config-');
    mkdirSync(dir, { recursive: true });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const problems = (hooks: Record<string, unknown>): string[] => {
    const path = join(dir, 'agentgate.json5');
    const config = {
      gateway: { auth: { token: ADMIN_TOKEN } },
      hooks: { enabled: true, token: HOOK_TOKEN, ...hooks },
    };
    writeFileSync(path, JSON.stringify(config));
    const result = loadConfigFile(path, {});
    return result.ok ? [] : result.problems;
  };

  it('accepts good values and defaults maxWaitSeconds to 120', () => {
    expect(
      problems({
        maxWaitSeconds: 600,
        rateLimit: { perMinute: 1 },
        maxConcurrentRuns: 1,
        mappings: [
          {
            match: { path: 'a' },
            rateLimit: { perMinute: 1000 },
            maxConcurrentRuns: 3,
            waitForCompletion: true,
          },
        ],
      }),
    ).toEqual([]);
    const path = join(dir, 'agentgate.json5');
    writeFileSync(path, JSON.stringify({ hooks: { enabled: true, token: HOOK_TOKEN } }));
    const loaded = loadConfigFile(path, {});
    expect(loaded.ok && loaded.config.hooks.maxWaitSeconds).toBe(120);
  });

  it.each([0, -1, 1.5, '10', null])('hooks.rateLimit.perMinute %j', (perMinute) => {
    expect(problems({ rateLimit: { perMinute } })).toEqual([
      expect.stringMatching(/^hooks\.rateLimit\.perMinute: /),
    ]);
  });

  it.each([0, -3, 2.5, 'x'])('hooks.mappings[0].rateLimit.perMinute %j', (perMinute) => {
    expect(problems({ mappings: [{ match: { path: 'a' }, rateLimit: { perMinute } }] })).toEqual([
      expect.stringMatching(/^hooks\.mappings\[0\]\.rateLimit\.perMinute: /),
    ]);
  });

  it('a rateLimit without perMinute, or with an unknown key', () => {
    expect(problems({ rateLimit: {} })).toEqual([expect.stringMatching(/^hooks\.rateLimit\.perMinute: /)]);
    expect(problems({ rateLimit: { perMinute: 5, burst: 10 } })).toEqual([
      'hooks.rateLimit.burst: unknown key',
    ]);
  });

  it.each([0, -1, 1.5, true])('maxConcurrentRuns %j, on hooks and on a mapping', (value) => {
    expect(problems({ maxConcurrentRuns: value })).toEqual([
      expect.stringMatching(/^hooks\.maxConcurrentRuns: /),
    ]);
    expect(problems({ mappings: [{ match: { path: 'a' }, maxConcurrentRuns: value }] })).toEqual([
      expect.stringMatching(/^hooks\.mappings\[0\]\.maxConcurrentRuns: /),
    ]);
  });

  it.each([0, 0.5, 601, 'long'])('hooks.maxWaitSeconds %j', (value) => {
    expect(problems({ maxWaitSeconds: value })).toEqual([expect.stringMatching(/^hooks\.maxWaitSeconds: /)]);
  });

  it.each(['yes', 1, null])('hooks.mappings[0].waitForCompletion %j', (value) => {
    expect(problems({ mappings: [{ match: { path: 'a' }, waitForCompletion: value }] })).toEqual([
      expect.stringMatching(/^hooks\.mappings\[0\]\.waitForCompletion: /),
    ]);
  });
});
