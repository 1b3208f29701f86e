/**
 * The store's replicas part (docs/architecture.md, "The store's parts"): every driver
 * has one, and says whether other processes share the store — the flag the gateway
 * decides the lockout and the streamed pieces by. On SQLite it does nothing.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';

describe.each(DRIVERS)('the replicas part: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  it('is shared exactly where two stores on the same data act as two replicas', () => {
    expect(store.replicas.shared).toBe(driver.replicas);
  });

  it.runIf(!driver.replicas)('publishes to no one, never calls a watcher and counts nothing', async () => {
    const seen: unknown[] = [];
    const unwatchDeltas = store.replicas.watchDeltas((payload) => seen.push(payload));
    const unwatchLocks = store.replicas.lockouts.watchLocks((lock) => seen.push(lock));
    await store.replicas.sendDelta('{"o":"a","r":"run_1","f":1}');
    const policy = { maxFailures: 1, windowMs: 60_000, lockoutMs: 60_000 };
    const verdicts = await store.replicas.lockouts.recordFailures([{ key: '203.0.113.7', at: 1 }], policy);
    expect(verdicts).toEqual([{ outcome: 'counted' }]);
    expect(await store.replicas.lockouts.activeLocks(2)).toEqual([]);
    expect(await store.replicas.lockouts.prune(2, policy.windowMs)).toBe(0);
    unwatchDeltas();
    unwatchLocks();
    expect(seen).toEqual([]);
  });
});
