/**
 * The auth-failure lockout across replicas (CONTRACT §11) on the real
 * PostgreSQL server: the shared ledger on its own, then two replicas' limiters
 * on one database, then two real gateways answering HTTP.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AuthFailureLimiter } from '../../src/auth/auth-limiter.js';
import { SharedLockout } from '../../src/auth/shared-lockout.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import type { AddressLock } from '../../src/store/types.js';
import { HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from './engines.js';

const POLICY = { maxFailures: 20, windowMs: 60_000, lockoutMs: 60_000 };

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

  it('counts failures of one address from two replicas together and announces the lock to both', async () => {
    const [a, b] = [await open(), await open()];
    const seen: Record<string, AddressLock[]> = { a: [], b: [] };
    a.lockouts.watchLocks((lock) => lock && seen.a?.push(lock));
    b.lockouts.watchLocks((lock) => lock && seen.b?.push(lock));
    await Promise.all([a.listening(), b.listening()]);
    const now = Date.now();

    await a.lockouts.recordFailures(failures('203.0.113.7', 10, now), POLICY);
    await b.lockouts.recordFailures(failures('203.0.113.7', 9, now + 10), POLICY);
    expect(await a.lockouts.activeLocks(now + 100)).toEqual([]);
    await b.lockouts.recordFailures(failures('203.0.113.7', 1, now + 20), POLICY);

    const expected = { key: '203.0.113.7', until: now + 20 + POLICY.lockoutMs };
    expect(await b.lockouts.activeLocks(now + 100)).toEqual([expected]);
    await waitFor(() => seen.a?.length === 1 && seen.b?.length === 1, 'the lock announced to both replicas');
    expect(seen.a).toEqual([expected]);
    expect(seen.b).toEqual([expected]);
  });

  it('forgets failures that left the window, keeps a lock through failures and resets, and prunes', async () => {
    const store = await open();
    const now = Date.now();
    await store.lockouts.recordFailures(failures('198.51.100.1', 19, now - 61_000), POLICY);
    await store.lockouts.recordFailures(failures('198.51.100.1', 19, now), POLICY);
    expect(await store.lockouts.activeLocks(now + 100)).toEqual([]); // 19 inside the window, not 38

    await store.lockouts.recordFailures(failures('198.51.100.1', 1, now + 100), POLICY);
    const [lock] = await store.lockouts.activeLocks(now + 200);
    expect(lock?.until).toBe(now + 100 + POLICY.lockoutMs);
    // More failures and a success during the lock change nothing.
    await store.lockouts.recordFailures(failures('198.51.100.1', 30, now + 300), POLICY);
    await store.lockouts.reset('198.51.100.1', now + 400);
    expect(await store.lockouts.activeLocks(now + 500)).toEqual([lock]);

    // A success outside a lock forgets the count.
    await store.lockouts.recordFailures(failures('198.51.100.2', 19, now), POLICY);
    await store.lockouts.reset('198.51.100.2', now + 50);
    await store.lockouts.recordFailures(failures('198.51.100.2', 1, now + 60), POLICY);
    expect((await store.lockouts.activeLocks(now + 100)).map((l) => l.key)).toEqual(['198.51.100.1']);

    // Pruning keeps the lock and the recent count, drops what has nothing left to say.
    expect(await store.lockouts.prune(now + 30_000, POLICY.windowMs)).toBe(0);
    expect(await store.lockouts.prune(now + 100 + POLICY.lockoutMs + 1, POLICY.windowMs)).toBe(2);
  });

  it('two replicas counting the same addresses at the same moment neither deadlock nor lose a failure', async () => {
    const [a, b] = [await open(), await open()];
    const now = Date.now();
    const keys = Array.from({ length: 50 }, (_, i) => `192.0.2.${i}`);
    const batch = (reverse: boolean) =>
      (reverse ? [...keys].reverse() : keys).map((key) => ({ key, at: now }));
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? a : b).lockouts.recordFailures([...batch(i % 2 === 0), ...batch(i % 3 === 0)], POLICY),
      ),
    );
    // 10 batches × 2 failures per key = 20: every key locked, none twice.
    const locks = await a.lockouts.activeLocks(now + 1);
    expect(locks.map((l) => l.key).sort()).toEqual([...keys].sort());
  });

  it("a replica's limiter refuses an address once its failures on both replicas reach 20, and a new replica loads the lock", async () => {
    const [a, b] = [await open(), await open()];
    const limiterA = new SharedLockout(new AuthFailureLimiter(), a.lockouts);
    const limiterB = new SharedLockout(new AuthFailureLimiter(), b.lockouts);
    await Promise.all([limiterA.start(), limiterB.start()]);
    for (let i = 0; i < 10; i++) limiterA.fail('2001:db8:1:2::5');
    for (let i = 0; i < 10; i++) limiterB.fail('2001:db8:1:2::99'); // the same /64
    // Neither replica saw 20 on its own…
    await waitFor(
      () => limiterA.check('2001:db8:1:2::1').locked && limiterB.check('2001:db8:1:2::1').locked,
      'both limiters to refuse the /64',
    );
    expect(limiterA.check('2001:db8:1:3::1').locked).toBe(false);

    const c = await open();
    const limiterC = new SharedLockout(new AuthFailureLimiter(), c.lockouts);
    await limiterC.start();
    expect(limiterC.check('2001:db8:1:2::abcd')).toMatchObject({ locked: true });
    await Promise.all([limiterA.stop(), limiterB.stop(), limiterC.stop()]);
  });

  describe('over HTTP, two gateways on one database', () => {
    let gateways: TestGateway[] = [];
    afterEach(async () => {
      for (const gateway of gateways) await gateway.stop();
      gateways = [];
    });

    it('10 wrong tokens on each replica lock the address on both; the right token is refused 429 on both', async () => {
      const config = { store: { driver: 'postgres', url: database.url } };
      gateways = [await startTestGateway(config), await startTestGateway(config)];
      const wake = (gateway: TestGateway, token: string) =>
        fetch(`${gateway.url}/hooks/wake`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ text: 'hello' }),
        });
      for (const gateway of gateways) {
        for (let i = 0; i < 10; i++) expect((await wake(gateway, 'wrong-token')).status).toBe(401);
      }
      // Locked in the database first (a good token sent before that would only be a success).
      const probe = await open();
      await waitFor(
        async () => (await probe.lockouts.activeLocks(Date.now())).length === 1,
        'the address locked in the database',
      );
      for (const gateway of gateways) {
        await waitFor(async () => (await wake(gateway, HOOK_TOKEN)).status === 429, 'a 429 on each replica');
        const refused = await wake(gateway, HOOK_TOKEN);
        expect(refused.status).toBe(429);
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    });
  });
});
