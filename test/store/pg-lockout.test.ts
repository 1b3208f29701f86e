/**
 * The auth-failure lockout across replicas (docs/postgres.md) on the real
 * PostgreSQL server: the shared ledger and its verdicts on their own, then
 * replicas' limiters on one database (and one that loses the database), then
 * two real gateways answering HTTP to an attacker alternating between them.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AuthFailureLimiter } from '../../src/auth/auth-limiter.js';
import { SharedLockout } from '../../src/auth/shared-lockout.js';
import type { Logger } from '../../src/log.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import type { AddressLock, LedgerVerdict } from '../../src/store/types.js';
import { HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { parseExposition, sampleValue } from '../metrics/exposition.js';
import { createTestDatabase, PG_ADMIN_URL, PG_ENABLED } from './drivers.js';

const POLICY = { maxFailures: 20, windowMs: 60_000, lockoutMs: 60_000 };

const outcomes = (verdicts: LedgerVerdict[]) => verdicts.map((v) => v.outcome);
const tally = <T extends string>(values: T[]) => {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
};

describe.skipIf(!PG_ENABLED)('auth lockout across replicas (PostgreSQL)', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let stores: PgStore[] = [];
  const open = async () => {
    const store = new PgStore({ url: database.url, poolMax: 3 });
    stores.push(store);
    await store.ready;
    return store;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => {
    for (const store of stores) await store.close();
    stores = [];
    const store = new PgStore({ url: database.url, poolMax: 1 });
    await store.pool.query('TRUNCATE auth_failures');
    await store.close();
  });
  afterAll(async () => {
    await database.drop();
  });

  const failures = (key: string, count: number, at: number) =>
    Array.from({ length: count }, (_, i) => ({ key, at: at + i }));

  describe('the ledger', () => {
    it('counts failures of one address from two replicas together, with a verdict for each, and announces the lock to both', async () => {
      const [a, b] = [await open(), await open()];
      const seen: Record<string, AddressLock[]> = { a: [], b: [] };
      a.replicas.lockouts.watchLocks((lock) => lock && seen.a?.push(lock));
      b.replicas.lockouts.watchLocks((lock) => lock && seen.b?.push(lock));
      await Promise.all([a.listening(), b.listening()]);
      const now = Date.now();

      const first = await a.replicas.lockouts.recordFailures(failures('203.0.113.7', 10, now), POLICY);
      expect(outcomes(first)).toEqual(Array(10).fill('counted'));
      const second = await b.replicas.lockouts.recordFailures(failures('203.0.113.7', 9, now + 10), POLICY);
      expect(outcomes(second)).toEqual(Array(9).fill('counted'));
      expect(await a.replicas.lockouts.activeLocks(now + 100)).toEqual([]);

      // The 20th is the one that locks (still a 401); those after it in the same batch are refused.
      const until = now + 21 + POLICY.lockoutMs;
      const third = await b.replicas.lockouts.recordFailures(failures('203.0.113.7', 3, now + 19), POLICY);
      expect(third).toEqual([
        { outcome: 'locked', until },
        { outcome: 'refused', until },
        { outcome: 'refused', until },
      ]);
      // Any replica's later failure is refused, and does not extend the lock.
      expect(await a.replicas.lockouts.recordFailures(failures('203.0.113.7', 1, now + 500), POLICY)).toEqual(
        [{ outcome: 'refused', until }],
      );

      const expected = { key: '203.0.113.7', until };
      expect(await b.replicas.lockouts.activeLocks(now + 100)).toEqual([expected]);
      await waitFor(
        () => seen.a?.length === 1 && seen.b?.length === 1,
        'the lock announced to both replicas',
      );
      expect(seen.a).toEqual([expected]);
      expect(seen.b).toEqual([expected]);
    });

    it('forgets failures that left the window, keeps a lock through failures and resets, counts afresh after it, and prunes', async () => {
      const store = await open();
      const now = Date.now();
      await store.replicas.lockouts.recordFailures(failures('198.51.100.1', 19, now - 61_000), POLICY);
      const inWindow = await store.replicas.lockouts.recordFailures(
        failures('198.51.100.1', 19, now),
        POLICY,
      );
      expect(outcomes(inWindow)).not.toContain('locked'); // 19 inside the window, not 38

      await store.replicas.lockouts.recordFailures(failures('198.51.100.1', 1, now + 100), POLICY);
      const [lock] = await store.replicas.lockouts.activeLocks(now + 200);
      expect(lock?.until).toBe(now + 100 + POLICY.lockoutMs);
      // More failures and a success during the lock change nothing.
      await store.replicas.lockouts.recordFailures(failures('198.51.100.1', 30, now + 300), POLICY);
      await store.replicas.lockouts.reset(['198.51.100.1'], now + 400);
      expect(await store.replicas.lockouts.activeLocks(now + 500)).toEqual([lock]);

      // A success outside a lock forgets the count.
      await store.replicas.lockouts.recordFailures(failures('198.51.100.2', 19, now), POLICY);
      await store.replicas.lockouts.reset(['198.51.100.2'], now + 50);
      await store.replicas.lockouts.recordFailures(failures('198.51.100.2', 1, now + 60), POLICY);
      expect((await store.replicas.lockouts.activeLocks(now + 100)).map((l) => l.key)).toEqual([
        '198.51.100.1',
      ]);

      // After the lock the count starts from zero: 19 more are counted, the 20th locks again.
      const after = (lock?.until ?? 0) + 1;
      const again = await store.replicas.lockouts.recordFailures(failures('198.51.100.1', 20, after), POLICY);
      expect(tally(outcomes(again))).toEqual({ counted: 19, locked: 1 });
      await store.pool.query('DELETE FROM auth_failures WHERE address_key = $1', ['198.51.100.1']);

      // Pruning keeps the recent count, drops what has nothing left to say.
      await store.replicas.lockouts.recordFailures(failures('198.51.100.3', 20, now + 100), POLICY);
      expect(await store.replicas.lockouts.prune(now + 30_000, POLICY.windowMs)).toBe(0);
      expect(await store.replicas.lockouts.prune(now + 119 + POLICY.lockoutMs + 1, POLICY.windowMs)).toBe(2);
    });

    it('many replicas counting the same addresses at the same moment neither deadlock nor lose a failure: exactly 20 pass per address', async () => {
      const replicas = [await open(), await open(), await open()];
      const now = Date.now();
      const keys = Array.from({ length: 50 }, (_, i) => `192.0.2.${i}`);
      const batch = (reverse: boolean) =>
        (reverse ? [...keys].reverse() : keys).map((key) => ({ key, at: now }));
      const results = await Promise.all(
        Array.from({ length: 15 }, (_, i) =>
          replicas[i % 3]?.replicas.lockouts
            .recordFailures([...batch(i % 2 === 0), ...batch(i % 3 === 0)], POLICY)
            .then((verdicts) =>
              verdicts.map((verdict, j) => ({
                key: batch(i % 2 === 0).concat(batch(i % 3 === 0))[j]?.key,
                verdict,
              })),
            ),
        ),
      );
      // 15 batches × 2 failures per key = 30: per key 19 counted, the 20th locks, 10 refused.
      for (const key of keys) {
        const mine = results.flat().filter((r) => r?.key === key);
        expect(tally(mine.map((r) => r?.verdict.outcome ?? 'missing'))).toEqual({
          counted: 19,
          locked: 1,
          refused: 10,
        });
      }
      const locks = await replicas[0]?.replicas.lockouts.activeLocks(now + 1);
      expect(locks?.map((l) => l.key).sort()).toEqual([...keys].sort());
    });
  });

  describe("the replicas' limiters", () => {
    const limiters: SharedLockout[] = [];
    afterEach(async () => {
      await Promise.all(limiters.splice(0).map((limiter) => limiter.stop()));
    });
    const limiterOn = async (store: PgStore, log?: Logger, clock?: () => number) => {
      const limiter = new SharedLockout(new AuthFailureLimiter(), store.replicas.lockouts, log, clock);
      limiters.push(limiter);
      await limiter.start();
      return limiter;
    };

    it('answer each failure once it is counted: 20 pass in all across two replicas failing at once, the rest are refused; a new replica loads the lock', async () => {
      const [a, b] = [await limiterOn(await open()), await limiterOn(await open())];
      // 30 failures of one /64 at once, alternating replicas; neither sees 20 of its own.
      const settled = await Promise.all(
        Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).fail(`2001:db8:1:2::${(i + 1).toString(16)}`)),
      );
      expect(tally(settled)).toEqual({ counted: 19, locked: 1, refused: 10 });
      // The replica with refused failures knows the lock from their verdicts; the other from the announcement.
      await waitFor(
        () => a.check('2001:db8:1:2::1').locked && b.check('2001:db8:1:2::1').locked,
        'both limiters to refuse the /64',
      );
      expect(a.check('2001:db8:1:3::1').locked).toBe(false);

      const c = await limiterOn(await open());
      expect(c.check('2001:db8:1:2::abcd')).toMatchObject({ locked: true });
    });

    it('a success sends a reset only where failures were sent, and it reaches the ledger before the next failure', async () => {
      const store = await open();
      const [a, b] = [await limiterOn(store), await limiterOn(await open())];
      for (let i = 0; i < 19; i++) await a.fail('198.51.100.9');
      a.succeed('198.51.100.9');
      expect(await a.fail('198.51.100.9')).toBe('counted'); // queued after the reset
      const { rows } = await store.pool.query('SELECT cardinality(failures) AS n FROM auth_failures');
      expect(rows).toEqual([{ n: 1 }]);
      // B sent nothing: its success is a memory lookup and forgets nothing.
      b.succeed('198.51.100.9');
      expect(tally(await Promise.all(Array.from({ length: 19 }, () => b.fail('198.51.100.9'))))).toEqual({
        counted: 18,
        locked: 1,
      });
    });

    it('count alone while the database refuses connections, warn, and use the ledger again once it is back', async () => {
      const store = await open();
      const warnings: unknown[][] = [];
      const log = { warn: (...args: unknown[]) => warnings.push(args) } as unknown as Logger;
      // The retry pause is read on the limiter's clock: the test moves it on instead of waiting.
      let ahead = 0;
      const limiter = await limiterOn(store, log, () => Date.now() + ahead);
      const name = new URL(database.url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      try {
        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [
          name,
        ]);
        const started = Date.now();
        const alone = [];
        for (let i = 0; i < 21; i++) alone.push(await limiter.fail('203.0.113.50'));
        expect(alone.slice(0, 19)).toEqual(Array(19).fill('counted'));
        expect(alone.slice(19)).toEqual(['locked', 'refused']); // this replica's own count
        expect(limiter.check('203.0.113.50').locked).toBe(true);
        expect(Date.now() - started).toBeLessThan(5_000); // answered, not stuck on the database
        expect(warnings).toEqual([[expect.anything(), expect.stringMatching(/counted per replica/)]]);
      } finally {
        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
        await admin.end();
      }
      // Once the retry pause (5 s) is over, failures go to the shared ledger again.
      ahead = 5_100;
      expect(await limiter.fail('203.0.113.51')).toBe('counted');
      const { rows } = await store.pool.query('SELECT address_key FROM auth_failures');
      expect(rows).toEqual([{ address_key: '203.0.113.51' }]);
    }, 20_000);
  });

  describe('over HTTP, two gateways on one database', () => {
    let gateways: TestGateway[] = [];
    afterEach(async () => {
      for (const gateway of gateways) await gateway.stop();
      gateways = [];
    });
    const startTwo = async () => {
      const config = { store: { driver: 'postgres', url: database.url } };
      gateways = [await startTestGateway(config), await startTestGateway(config)];
      return gateways as [TestGateway, TestGateway];
    };
    const wake = (gateway: TestGateway, token: string) =>
      fetch(`${gateway.url}/hooks/wake`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'hello' }),
      });
    const metric = async (name: string) => {
      let sum = 0;
      for (const { gateway } of gateways)
        sum += sampleValue(parseExposition(await gateway.metrics.exposition()), name) ?? 0;
      return sum;
    };
    const expectLockedOnBoth = async () => {
      for (const gateway of gateways) {
        const refused = await wake(gateway, HOOK_TOKEN);
        expect(refused.status).toBe(429);
        expect(await refused.json()).toMatchObject({ ok: false, code: 'rate_limited' });
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    };

    it('an attacker alternating replicas one guess at a time gets exactly 20 401s, then 429 on both, with the right token too', async () => {
      const [a, b] = await startTwo();
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await wake(i % 2 ? a : b, 'wrong-token')).status);
      expect(statuses).toEqual([...Array(20).fill(401), ...Array(10).fill(429)]);
      await expectLockedOnBoth();
      expect(await metric('agentgate_auth_failures_total')).toBe(20);
      expect(await metric('agentgate_auth_lockouts_total')).toBe(1);
    });

    it('an attacker alternating replicas as fast as it can, all guesses at once, gets exactly 20 401s in all', async () => {
      const [a, b] = await startTwo();
      const answers = await Promise.all(
        Array.from({ length: 80 }, async (_, i) => {
          const response = await wake(i % 2 ? a : b, 'wrong-token');
          const body = (await response.json()) as { code?: string };
          return { status: response.status, retryAfter: response.headers.get('retry-after'), body };
        }),
      );
      expect(tally(answers.map((answer) => String(answer.status)))).toEqual({ '401': 20, '429': 60 });
      for (const answer of answers.filter((answer) => answer.status === 429)) {
        expect(answer.body.code).toBe('rate_limited');
        expect(Number(answer.retryAfter)).toBeGreaterThan(0);
      }
      // Each replica answered at least twenty 429s itself (40 guesses, at most 20 of them 401), so each knows the lock now.
      await expectLockedOnBoth();
      expect(await metric('agentgate_auth_failures_total')).toBe(20);
      expect(await metric('agentgate_auth_lockouts_total')).toBe(1);
    });
  });
});
