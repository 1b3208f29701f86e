/**
 * The run queue on PostgreSQL, shared by every replica.
 *
 * A claim takes runnable rows with `FOR UPDATE SKIP LOCKED`, so replicas
 * claiming at the same moment never wait on each other nor take the same run.
 * A run is runnable when it is queued, or running with an expired lease (its
 * replica died: expiry, not a pid check, is what hands it to another), and it
 * is its session key's head (run_heads: the oldest unfinished run of the key) —
 * so runs sharing a key execute one at a time and in order. Accepts and
 * completions of a key hold the key's advisory lock, so two replicas never
 * disagree about a key's head. Every write is fenced by the
 * lease owner, so a replica that lost its lease can never record a result.
 */
import type pg from 'pg';
import { HEAD_SOURCES_CTE, noCaps, pickFairly, type RunCaps } from '../fair-share.js';
import type { ClaimedRun, RunCompletion, RunQueueStore, WakeMode } from '../types.js';
import { armCallbackInTx } from './callbacks.js';
import { inTransaction } from './db.js';
import { enqueueDeliveryInTx } from './outbox.js';
import { appendTranscriptInTx, insertEventInTx } from './sessions.js';
import { WORK_CHANNEL } from './work-listener.js';

export interface QueuedRow {
  id: string;
  agent_id: string;
  session_key: string;
  main_session_key: string;
  name: string | null;
  message: string;
  model: string | null;
  thinking: string | null;
  timeout_seconds: number;
  wake_mode: WakeMode;
  deliver: boolean;
  channel: string;
  recipient: string | null;
  allow_unsafe: boolean;
  source: string;
  created_at: number;
  started_at: number;
  attempts: number;
  seq: number;
}

export const toClaimedRun = (row: QueuedRow): ClaimedRun => ({
  id: row.id,
  agentId: row.agent_id,
  sessionKey: row.session_key,
  mainSessionKey: row.main_session_key,
  name: row.name,
  message: row.message,
  model: row.model,
  thinking: row.thinking,
  timeoutSeconds: row.timeout_seconds,
  wakeMode: row.wake_mode,
  deliver: row.deliver,
  channel: row.channel,
  to: row.recipient,
  allowUnsafeExternalContent: row.allow_unsafe,
  source: row.source,
  createdAt: row.created_at,
  startedAt: row.started_at,
  attempts: row.attempts,
});

/**
 * Claims are taken one at a time across replicas (a transaction-scoped advisory
 * lock), so the running counts a claim reads are exact and a source's cap holds
 * across replicas. A claim is a few indexed reads, so serialising them costs
 * little next to the runs they start.
 */
const CLAIM_LOCK_KEY = 0x61676763; // "aggc"

/** Runs executing now, per source (an expired lease is claimable, so it does not count). */
const RUNNING_BY_SOURCE = `
  SELECT source, COUNT(*)::int AS n FROM runs WHERE status = 'running' AND lease_until >= $1 GROUP BY source`;

/**
 * The oldest $1 heads of every source, from run_heads alone (an index-only scan
 * per source): a head is its key's oldest unfinished run, so a hot key with
 * thousands queued costs one row, and a flooded source costs $1 rows, not its
 * backlog. The few heads found are then checked against runs by primary key
 * (CLAIMABLE); joining in one statement let the planner merge-join through the
 * whole backlog instead.
 */
const HEADS = `
  ${HEAD_SOURCES_CTE}
  SELECT c.seq FROM sources CROSS JOIN LATERAL (
    SELECT h.seq FROM run_heads h WHERE h.source = sources.source ORDER BY h.seq LIMIT $1) c
   WHERE sources.source IS NOT NULL`;

/** Which of these heads may be claimed: queued, or running with an expired lease. */
const CLAIMABLE = `
  SELECT seq, source FROM runs
   WHERE seq = ANY($1::int8[]) AND (status = 'queued' OR (status = 'running' AND lease_until < $2))`;

/** Leases the picked heads; the status check is repeated under the row locks. */
const LEASE = `
  UPDATE runs SET status = 'running', lease_owner = $1, lease_until = $3,
                  started_at = COALESCE(started_at, $2), attempts = attempts + 1
   WHERE seq = ANY($4::int8[]) AND (status = 'queued' OR (status = 'running' AND lease_until < $2))
  RETURNING *`;

export class PgRunQueue implements RunQueueStore {
  constructor(private readonly pool: pg.Pool) {}

  async claimRuns(
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    caps: RunCaps = noCaps,
  ): Promise<ClaimedRun[]> {
    if (limit <= 0) return [];
    const rows = await inTransaction(this.pool, async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [CLAIM_LOCK_KEY]);
      const counted = await tx.query<{ source: string; n: number }>(RUNNING_BY_SOURCE, [now]);
      const running = new Map(counted.rows.map((row) => [row.source, row.n]));
      // A source's heads that are not claimable are running ones: at most `running` in all.
      const busy = [...running.values()].reduce((sum, n) => sum + n, 0);
      const oldest = await tx.query<{ seq: number }>(HEADS, [limit + busy]);
      const found = await tx.query<{ seq: number; source: string }>(CLAIMABLE, [
        oldest.rows.map((row) => row.seq),
        now,
      ]);
      const bySource = new Map<string, { seq: number }[]>();
      for (const row of found.rows.sort((a, b) => a.seq - b.seq)) {
        bySource.set(row.source, [...(bySource.get(row.source) ?? []), row]);
      }
      const candidates = [...bySource].map(([source, heads]) => ({ source, heads }));
      const picked = pickFairly(candidates, running, caps, limit, (head) => head.seq);
      if (picked.length === 0) return [];
      const seqs = picked.map((head) => head.seq);
      const leased = await tx.query<QueuedRow>(LEASE, [owner, now, now + leaseMs, seqs]);
      // In the order the slots were given out.
      const order = new Map(seqs.map((seq, index) => [seq, index]));
      return leased.rows.sort((a, b) => (order.get(a.seq) ?? 0) - (order.get(b.seq) ?? 0));
    });
    return rows.map(toClaimedRun);
  }

  async renewLeases(owner: string, runIds: readonly string[], until: number): Promise<void> {
    if (runIds.length === 0) return;
    await inTransaction(this.pool, (tx) =>
      tx.query(
        `UPDATE runs SET lease_until = $1 WHERE id = ANY($2::text[]) AND lease_owner = $3 AND status = 'running'`,
        [until, runIds, owner],
      ),
    );
  }

  async releaseRun(runId: string, owner: string): Promise<boolean> {
    const result = await inTransaction(this.pool, (tx) =>
      tx.query(
        `UPDATE runs SET status = 'queued', lease_owner = NULL, lease_until = NULL, attempts = GREATEST(attempts - 1, 0)
          WHERE id = $1 AND lease_owner = $2 AND status = 'running'`,
        [runId, owner],
      ),
    );
    if (result.rowCount === 1)
      await this.pool.query(`SELECT pg_notify('${WORK_CHANNEL}', '')`).catch(() => {});
    return result.rowCount === 1;
  }

  /**
   * Nothing to do on PostgreSQL: replicas cannot see each other's pids, so a run
   * left by a dead replica becomes claimable when its lease expires.
   */
  async requeueOrphans(): Promise<string[]> {
    return [];
  }

  async completeRun(c: RunCompletion): Promise<boolean> {
    return inTransaction(this.pool, async (tx) => {
      const { delivery } = c;
      const changed = await tx.query(
        `UPDATE runs SET status = $1, reply = $2, error = $3, finished_at = $4, lease_owner = NULL, lease_until = NULL,
                         delivery_status = $5, delivery_channel = $6, delivery_to = $7, delivery_reason = $8
          WHERE id = $9 AND lease_owner = $10 AND status = 'running'`,
        [
          c.status,
          c.reply,
          c.error,
          c.finishedAt,
          delivery.status,
          delivery.channel,
          delivery.to,
          delivery.reason,
          c.runId,
          c.owner,
        ],
      );
      if (changed.rowCount !== 1) return false;
      // This run was its key's head: the next one moves up. The key's lock orders this
      // against an accept of the same key on another replica, so no run is left headless.
      await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [c.sessionKey]);
      await tx.query('DELETE FROM run_heads WHERE session_key = $1', [c.sessionKey]);
      await tx.query(
        `INSERT INTO run_heads (session_key, seq, source)
           SELECT session_key, seq, source FROM runs
            WHERE session_key = $1 AND status IN ('queued', 'running') ORDER BY seq LIMIT 1
         ON CONFLICT (session_key) DO NOTHING`,
        [c.sessionKey],
      );
      await appendTranscriptInTx(tx, c.sessionKey, c.transcript, c.runId, c.finishedAt);
      await insertEventInTx(tx, c.summary);
      if (delivery.status === 'pending' && c.reply !== null) {
        await enqueueDeliveryInTx(
          tx,
          {
            kind: 'run',
            refId: c.runId,
            mainSessionKey: c.summary.sessionKey,
            channel: delivery.channel ?? 'last',
            to: delivery.to,
            text: c.reply,
          },
          c.finishedAt,
        );
      } else {
        // Nothing to deliver: the result is final, and the run's callback becomes due.
        await armCallbackInTx(tx, c.runId, c.finishedAt);
      }
      // The key's next run may now be claimed, by any replica.
      await tx.query(`SELECT pg_notify('${WORK_CHANNEL}', '')`);
      return true;
    });
  }
}
