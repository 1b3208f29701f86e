/**
 * The auth-failure lockout counted across replicas (CONTRACT §11): one row per
 * address key with its recent failure times (a sliding window, as the in-memory
 * limiter keeps) and the end of its lock. A batch of failures is one statement
 * pair in one transaction; a lock that begins is announced with NOTIFY on
 * `agentgate_lockout`, so every replica refuses the address within milliseconds.
 *
 * Rows are taken in key order (INSERT … SELECT … ORDER BY), so two replicas
 * counting the same addresses at once queue on each other's row locks instead
 * of deadlocking.
 */
import type pg from 'pg';
import type { AddressLock, LockoutLedger, LockoutPolicy } from '../types.js';
import { inTransaction, read } from './db.js';
import { LOCKOUT_CHANNEL, type WorkListener } from './work-listener.js';

/** Adds the batch's failures to each address's window, dropping times that left it; locked rows stay as they are. */
const COUNT_FAILURES = `
  INSERT INTO auth_failures AS f (address_key, failures)
  SELECT k, array_agg(at ORDER BY at) FROM unnest($1::text[], $2::int8[]) AS t(k, at)
   GROUP BY k ORDER BY k
  ON CONFLICT (address_key) DO UPDATE SET failures =
    CASE WHEN f.locked_until > $3 THEN f.failures
         ELSE ARRAY(SELECT x FROM unnest(f.failures || excluded.failures) AS x WHERE x > $3 - $4::int8 ORDER BY x)
    END`;

/** Locks the addresses of this batch that reached the limit, and announces each lock. */
const START_LOCKS = `
  WITH locked AS (
    UPDATE auth_failures SET locked_until = $2 + $4::int8, failures = '{}'
     WHERE address_key = ANY($1::text[]) AND locked_until <= $2 AND cardinality(failures) >= $3
    RETURNING address_key, locked_until)
  SELECT address_key, locked_until, pg_notify('${LOCKOUT_CHANNEL}', address_key || ' ' || locked_until)
    FROM locked`;

export class PgLockoutLedger implements LockoutLedger {
  constructor(
    private readonly pool: pg.Pool,
    private readonly listener: WorkListener,
    private readonly ready: Promise<void>,
  ) {}

  async recordFailures(
    failures: readonly { key: string; at: number }[],
    policy: LockoutPolicy,
  ): Promise<void> {
    if (failures.length === 0) return;
    await this.ready;
    const now = Math.max(...failures.map((f) => f.at));
    const keys = [...new Set(failures.map((f) => f.key))];
    await inTransaction(this.pool, async (tx) => {
      await tx.query(COUNT_FAILURES, [
        failures.map((f) => f.key),
        failures.map((f) => f.at),
        now,
        policy.windowMs,
      ]);
      await tx.query(START_LOCKS, [keys, now, policy.maxFailures, policy.lockoutMs]);
    });
  }

  async reset(key: string, now: number): Promise<void> {
    await this.ready;
    await read(this.pool, 'DELETE FROM auth_failures WHERE address_key = $1 AND locked_until <= $2', [
      key,
      now,
    ]);
  }

  async activeLocks(now: number): Promise<AddressLock[]> {
    await this.ready;
    const rows = await read<{ address_key: string; locked_until: number }>(
      this.pool,
      'SELECT address_key, locked_until FROM auth_failures WHERE locked_until > $1 ORDER BY locked_until',
      [now],
    );
    return rows.map((row) => ({ key: row.address_key, until: row.locked_until }));
  }

  watchLocks(listener: (lock: AddressLock | undefined) => void): () => void {
    return this.listener.subscribe(LOCKOUT_CHANNEL, (payload) => {
      if (payload === undefined) return listener(undefined);
      const space = payload.lastIndexOf(' ');
      const until = Number(payload.slice(space + 1));
      if (space > 0 && Number.isFinite(until)) listener({ key: payload.slice(0, space), until });
    });
  }

  async prune(now: number, windowMs: number): Promise<number> {
    await this.ready;
    const rows = await read<{ n: number }>(
      this.pool,
      `WITH gone AS (
         DELETE FROM auth_failures
          WHERE locked_until <= $1
            AND (cardinality(failures) = 0 OR failures[cardinality(failures)] <= $1 - $2::int8)
         RETURNING 1)
       SELECT count(*)::int8 AS n FROM gone`,
      [now, windowMs],
    );
    return rows[0]?.n ?? 0;
  }
}
