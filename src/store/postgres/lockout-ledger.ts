/**
 * The auth-failure lockout counted across replicas (docs/postgres.md): one row
 * per address key with its recent failure times (a sliding window, as the
 * in-memory limiter keeps) and the end of its lock.
 *
 * A batch of failures is one statement (`COUNT`), so each failure costs its
 * request one round trip, shared with every failure of the same batch. The
 * upsert takes each row's lock and reads its latest committed version, so the
 * replicas' failures of one address are counted one after the other: the
 * verdicts are exact (20 'counted' or 'locked' per window, then 'refused')
 * however many replicas count at once. A lock that begins is announced with
 * NOTIFY on `agentgate_lockout`, so every replica refuses the address within
 * milliseconds.
 *
 * Rows are taken in key order (INSERT … SELECT … ORDER BY), so two replicas
 * counting the same addresses at once queue on each other's row locks instead
 * of deadlocking.
 *
 * How a row reads back, so that the verdicts come out of the same statement
 * (PostgreSQL 15 cannot RETURNING the row as it was):
 * - locked before this batch: its failures emptied, `locked_until` unchanged;
 * - locked by this batch: the failures that reached the limit kept, `locked_until`
 *   = now + lockout;
 * - still counting: its failures in the window, `locked_until` 0.
 * A row whose lock has ended counts afresh (the count was reset when the lock began).
 */
import type pg from 'pg';
import type { AddressLock, LedgerVerdict, LockoutLedger, LockoutPolicy } from '../types.js';
import { read } from './db.js';
import { LOCKOUT_CHANNEL, type WorkListener } from './work-listener.js';

/** The failures a not-locked row counts: the batch's, after its own in the window unless a lock ended. */
const COUNTING = `ARRAY(SELECT x FROM unnest(CASE WHEN f.locked_until > 0 THEN excluded.failures
                                                  ELSE f.failures || excluded.failures END) AS x
                        WHERE x > $3::int8 - $6::int8 ORDER BY x)`;

/** $1 keys, $2 times, $3 now, $4 max failures, $5 lockout ms, $6 window ms. */
const COUNT = `
  WITH counted AS (
    INSERT INTO auth_failures AS f (address_key, failures, locked_until)
    SELECT k, array_agg(at ORDER BY at),
           CASE WHEN count(*) >= $4::int4 THEN $3::int8 + $5::int8 ELSE 0 END
      FROM unnest($1::text[], $2::int8[]) AS t(k, at)
     GROUP BY k ORDER BY k
    ON CONFLICT (address_key) DO UPDATE SET
      failures = CASE WHEN f.locked_until > $3::int8 THEN '{}' ELSE ${COUNTING} END,
      locked_until = CASE WHEN f.locked_until > $3::int8 THEN f.locked_until
                          WHEN cardinality(${COUNTING}) >= $4::int4 THEN $3::int8 + $5::int8
                          ELSE 0 END
    RETURNING address_key, cardinality(failures) AS counted, locked_until)
  SELECT address_key, counted, locked_until,
         CASE WHEN locked_until > $3::int8 AND counted > 0
              THEN pg_notify('${LOCKOUT_CHANNEL}', address_key || ' ' || locked_until) END AS announced
    FROM counted`;

interface CountedRow {
  address_key: string;
  counted: number;
  locked_until: number;
}

export class PgLockoutLedger implements LockoutLedger {
  constructor(
    private readonly pool: pg.Pool,
    private readonly listener: WorkListener,
    private readonly ready: Promise<void>,
  ) {}

  async recordFailures(
    failures: readonly { key: string; at: number }[],
    policy: LockoutPolicy,
  ): Promise<LedgerVerdict[]> {
    if (failures.length === 0) return [];
    await this.ready;
    const now = Math.max(...failures.map((f) => f.at));
    const rows = await read<CountedRow>(this.pool, COUNT, [
      failures.map((f) => f.key),
      failures.map((f) => f.at),
      now,
      policy.maxFailures,
      policy.lockoutMs,
      policy.windowMs,
    ]);
    return verdicts(failures, new Map(rows.map((row) => [row.address_key, row])), now, policy);
  }

  async reset(keys: readonly string[], now: number): Promise<void> {
    if (keys.length === 0) return;
    await this.ready;
    await read(
      this.pool,
      'DELETE FROM auth_failures WHERE address_key = ANY($1::text[]) AND locked_until <= $2',
      [keys, now],
    );
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

/**
 * Each failure's verdict from its row as it reads back: the batch's failures
 * of a key were counted after the row's earlier ones, in order, so the i-th of
 * them is failure number (counted − batch size + i) of the window.
 */
function verdicts(
  failures: readonly { key: string; at: number }[],
  rows: ReadonlyMap<string, CountedRow>,
  now: number,
  policy: LockoutPolicy,
): LedgerVerdict[] {
  const inBatch = new Map<string, number>();
  for (const { key } of failures) inBatch.set(key, (inBatch.get(key) ?? 0) + 1);
  const seen = new Map<string, number>();
  return failures.map(({ key }) => {
    const row = rows.get(key);
    if (!row) throw new Error(`auth lockout: no row returned for a counted address`);
    const until = row.locked_until;
    if (until <= now) return { outcome: 'counted' };
    if (row.counted === 0) return { outcome: 'refused', until }; // locked before this batch
    const nth = row.counted - (inBatch.get(key) as number) + (seen.get(key) ?? 0) + 1;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    if (nth < policy.maxFailures) return { outcome: 'counted' };
    return nth === policy.maxFailures ? { outcome: 'locked', until } : { outcome: 'refused', until };
  });
}
