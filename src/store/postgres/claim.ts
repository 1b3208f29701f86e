/**
 * A claim on PostgreSQL, pipelined (db.ts): its reads go out together — in a
 * completion's transaction, with the completion's writes — and the lease goes
 * out with the COMMIT, so a claim costs one round trip of its own, plus one
 * only when a head it found belongs to a capped hook (docs/architecture.md,
 * "Across PostgreSQL replicas"; docs/postgres.md, Group commit).
 *
 * 1. Reads: the runs running per source, and the claimable heads, locked for
 *    this claim with `FOR UPDATE SKIP LOCKED` (a head another replica is
 *    claiming right now is skipped, never waited for).
 * 2. Only when some of those heads belong to a hook with `maxConcurrentRuns`:
 *    that hook's claim lock, then its running count read again under the lock,
 *    so the count its cap is checked against is exact across replicas. Uncapped
 *    hooks take no lock.
 * 3. The fair pick (store/fair-share.ts), then the lease, sent without waiting:
 *    every head picked is locked by this transaction and was claimable when
 *    locked, so the lease takes each one.
 */
import type pg from 'pg';
import { HEAD_SOURCES_CTE, noCaps, pickFairly, type RunCaps } from '../fair-share.js';
import {
  dueSql,
  HOLD_LISTS,
  type HoldDialect,
  holdsAny,
  holdValues,
  notHeldSql,
} from '../rules/claim-hold.js';
import { type QueuedRow, toClaimedRun } from '../run-rows.js';
import type { ClaimedRun, ClaimRequest } from '../types.js';
import type { Pipeline } from './db.js';

/** Lock-key namespace of the per-source claim locks (capped sources only). */
const CAPPED_SOURCE_LOCK = 'agentgate:claim:';

/** Runs executing now, per source (an expired lease is claimable, so it does not count). */
const RUNNING_BY_SOURCE = `
  SELECT source, COUNT(*)::int AS n FROM runs WHERE status = 'running' AND lease_until >= $1 GROUP BY source`;

/** The same for a few sources, read again under their claim locks. */
const RUNNING_OF_SOURCES = `
  SELECT source, COUNT(*)::int AS n FROM runs
   WHERE status = 'running' AND lease_until >= $1 AND source = ANY($2::text[]) GROUP BY source`;

/** The claim locks of capped sources, in sorted order (no deadlock between replicas). */
const LOCK_SOURCES = `SELECT count(pg_advisory_xact_lock(hashtextextended($2 || k, 0))) FROM unnest($1::text[]) AS k`;

/**
 * The claimable heads, locked for this claim. The oldest heads of every source
 * come from run_heads alone (an index-only scan per source): $1 plus the runs
 * that hold a head without being claimable — the runs running now (at $2) and
 * the queued ones deferred past it (few, through runs_deferred; they keep their
 * key's head: store/rules/claim-hold.ts); a head is its key's oldest unfinished
 * run, so a hot key with thousands queued costs one row, and a flooded source
 * costs that many rows, not its backlog. `ARRAY(…)` makes those few seqs a value
 * computed first, so runs is then read by primary key only: a join let the
 * planner merge-join through the whole backlog instead.
 */
const CLAIMABLE_HEADS = `
  ${HEAD_SOURCES_CTE},
  busy(n) AS (SELECT (SELECT COUNT(*)::int FROM runs WHERE status = 'running' AND lease_until >= $2)
                   + (SELECT COUNT(*)::int FROM runs WHERE status = 'queued' AND not_before > $2))
  SELECT seq, source FROM runs
   WHERE seq = ANY(ARRAY(
           SELECT c.seq FROM sources CROSS JOIN LATERAL (
             SELECT h.seq FROM run_heads h WHERE h.source = sources.source ORDER BY h.seq
              LIMIT $1::int + (SELECT n FROM busy)) c
            WHERE sources.source IS NOT NULL))
     AND (status = 'queued' OR (status = 'running' AND lease_until < $2))
     AND ${dueSql('runs', '$2')}
     FOR UPDATE SKIP LOCKED`;

/** A claim's hold on PostgreSQL: each list bound as a text array, from $3 on (store/rules/claim-hold.ts). */
const HOLD_SQL: HoldDialect = {
  inList: (column, list) => `${column} = ANY($${3 + HOLD_LISTS.indexOf(list)}::text[])`,
  hasPrefix: (column, list) =>
    `EXISTS (SELECT 1 FROM unnest($${3 + HOLD_LISTS.indexOf(list)}::text[]) p WHERE starts_with(${column}, p))`,
};

/**
 * The claimable heads when the claim holds some runs back: held heads may be many (a provider's
 * every run), so each source's heads are filtered inside its lateral read, joined to runs,
 * before its LIMIT — which is then $1 alone. A statement of its own, so a claim without a
 * hold costs what it always did.
 */
const CLAIMABLE_HEADS_HELD = `
  ${HEAD_SOURCES_CTE}
  SELECT seq, source FROM runs
   WHERE seq = ANY(ARRAY(
           SELECT c.seq FROM sources CROSS JOIN LATERAL (
             SELECT h.seq FROM run_heads h JOIN runs r ON r.seq = h.seq
              WHERE h.source = sources.source
                AND (r.status = 'queued' OR (r.status = 'running' AND r.lease_until < $2))
                AND ${dueSql('r', '$2')} AND ${notHeldSql('r', HOLD_SQL)}
              ORDER BY h.seq LIMIT $1::int) c
            WHERE sources.source IS NOT NULL))
     AND (status = 'queued' OR (status = 'running' AND lease_until < $2))
     AND ${dueSql('runs', '$2')}
     FOR UPDATE SKIP LOCKED`;

/**
 * Leases the picked heads; the status check is repeated under the row locks.
 * The columns are named (a prepared statement: db.ts).
 */
const LEASE = `
  UPDATE runs SET status = 'running', lease_owner = $1, lease_until = $3,
                  started_at = COALESCE(started_at, $2), attempts = attempts + 1, not_before = NULL
   WHERE seq = ANY($4::int8[]) AND (status = 'queued' OR (status = 'running' AND lease_until < $2))
  RETURNING id, agent_id, session_key, main_session_key, name, message, model, thinking, timeout_seconds,
            wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at, started_at, attempts, seq,
            trace_parent, attachments, stream, held_ms, hook_id, token_id`;

type Counted = pg.QueryResult<{ source: string; n: number }>;

/** A claim whose reads are sent; their answers arrive with the transaction's next flush. */
export interface ClaimReads {
  request: ClaimRequest;
  running: Promise<Counted>;
  heads: Promise<pg.QueryResult<{ seq: number; source: string }>>;
}

/** A claim whose lease is sent: `runs` settles with the transaction's next flush (its COMMIT). */
export interface SentLease {
  /** How many runs the lease takes (known before its answer: see step 3). */
  taken: number;
  runs: Promise<ClaimedRun[]>;
}

export function sendClaimReads(tx: Pipeline, request: ClaimRequest): ClaimReads {
  return {
    request,
    running: tx.send(RUNNING_BY_SOURCE, [request.now]),
    heads: holdsAny(request.hold)
      ? tx.send(CLAIMABLE_HEADS_HELD, [request.limit, request.now, ...holdValues(request.hold)])
      : tx.send(CLAIMABLE_HEADS, [request.limit, request.now]),
  };
}

/**
 * After the reads' flush: locks the capped sources among the heads found (one
 * round trip, only then), picks fairly and sends the lease for `owner`.
 */
export async function sendLease(tx: Pipeline, owner: string, reads: ClaimReads): Promise<SentLease> {
  const { now, leaseMs, limit } = reads.request;
  const caps: RunCaps = reads.request.caps ?? noCaps;
  const found = (await reads.heads).rows.sort((a, b) => a.seq - b.seq);
  const running = new Map((await reads.running).rows.map((row) => [row.source, row.n]));
  const bySource = new Map<string, { seq: number }[]>();
  for (const row of found) bySource.set(row.source, [...(bySource.get(row.source) ?? []), row]);
  const capped = caps === noCaps ? [] : [...bySource.keys()].filter((s) => caps(s) !== undefined).sort();
  if (capped.length > 0) {
    tx.send(LOCK_SOURCES, [capped, CAPPED_SOURCE_LOCK]);
    const recount = tx.send<{ source: string; n: number }>(RUNNING_OF_SOURCES, [now, capped]);
    await tx.flush();
    for (const source of capped) running.delete(source);
    for (const row of (await recount).rows) running.set(row.source, row.n);
  }
  const candidates = [...bySource].map(([source, heads]) => ({ source, heads }));
  const picked = pickFairly(candidates, running, caps, limit, (head) => head.seq);
  if (picked.length === 0) return { taken: 0, runs: Promise.resolve([]) };
  const seqs = picked.map((head) => head.seq);
  const leased = tx.send<QueuedRow & { seq: number }>(LEASE, [owner, now, now + leaseMs, seqs]);
  // In the order the slots were given out.
  const order = new Map(seqs.map((seq, index) => [seq, index]));
  const runs = leased.then((result) =>
    result.rows.sort((a, b) => (order.get(a.seq) ?? 0) - (order.get(b.seq) ?? 0)).map(toClaimedRun),
  );
  runs.catch(() => {}); // reported by the flush that carries the lease
  return { taken: picked.length, runs };
}
