/**
 * The run queue on PostgreSQL, shared by every replica.
 *
 * A claim locks the runnable rows it picks with `FOR UPDATE SKIP LOCKED`, so
 * replicas claiming at the same moment never wait on each other nor take the
 * same run; there is no cluster-wide claim lock. Only a hook with a
 * `maxConcurrentRuns` cap serialises its own claims (a lock per capped source),
 * so the running count its cap is checked against is exact across replicas.
 * A run is runnable when it is queued, or running with an expired lease (its
 * replica died: expiry, not a pid check, is what hands it to another), and it
 * is its session key's head (run_heads: the oldest unfinished run of the key) —
 * so runs sharing a key execute one at a time and in order. Accepts and
 * completions of a key hold the key's advisory lock, so two replicas never
 * disagree about a key's head. Every write is fenced by the
 * lease owner, so a replica that lost its lease can never record a result.
 *
 * Completions are group-committed (store/rules/group-commit.ts): a batch is one
 * transaction of a fixed number of statements whatever its size, and sends at
 * most one NOTIFY — only when a key's next run moved up, and only as a hint:
 * every replica also polls.
 */
import type pg from 'pg';
import { HEAD_SOURCES_CTE, noCaps, pickFairly, type RunCaps } from '../fair-share.js';
import { type CompletionItem, claimsOf, planCompletions, share } from '../rules/completion.js';
import { GroupCommit } from '../rules/group-commit.js';
import {
  type ClaimedRun,
  type ClaimRequest,
  type CompletionOutcome,
  type RunCompletion,
  type RunQueueStore,
  StoreUnavailableError,
  type WakeMode,
} from '../types.js';
import { armCallbacksInTx } from './callbacks.js';
import { inTransaction, type Tx } from './db.js';
import { enqueueDeliveriesInTx } from './outbox.js';
import { appendTranscriptRowsInTx, insertEventsInTx } from './sessions.js';
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

/** Lock-key namespace of the per-source claim locks (capped sources only). */
const CAPPED_SOURCE_LOCK = 'agentgate:claim:';

/** Runs executing now, per source (an expired lease is claimable, so it does not count). */
const RUNNING_BY_SOURCE = `
  SELECT source, COUNT(*)::int AS n FROM runs WHERE status = 'running' AND lease_until >= $1 GROUP BY source`;

/**
 * The oldest heads of every source, from run_heads alone (an index-only scan
 * per source): $1 plus the runs running now (at $2), since a source's heads
 * that are not claimable are running ones. A head is its key's oldest
 * unfinished run, so a hot key with thousands queued costs one row, and a
 * flooded source costs that many rows, not its backlog. The few heads found
 * are then checked against runs by primary key (CLAIMABLE); joining in one
 * statement let the planner merge-join through the whole backlog instead.
 */
const HEADS = `
  ${HEAD_SOURCES_CTE},
  busy(n) AS (SELECT COUNT(*)::int FROM runs WHERE status = 'running' AND lease_until >= $2)
  SELECT c.seq FROM sources CROSS JOIN LATERAL (
    SELECT h.seq FROM run_heads h WHERE h.source = sources.source ORDER BY h.seq
     LIMIT $1::int + (SELECT n FROM busy)) c
   WHERE sources.source IS NOT NULL`;

/**
 * Which of these heads may be claimed (queued, or running with an expired
 * lease), locked for this claim; a head another replica is claiming right now
 * is skipped rather than waited for.
 */
const CLAIMABLE = `
  SELECT seq, source FROM runs
   WHERE seq = ANY($1::int8[]) AND (status = 'queued' OR (status = 'running' AND lease_until < $2))
     FOR UPDATE SKIP LOCKED`;

/** Leases the picked heads; the status check is repeated under the row locks. */
const LEASE = `
  UPDATE runs SET status = 'running', lease_owner = $1, lease_until = $3,
                  started_at = COALESCE(started_at, $2), attempts = attempts + 1
   WHERE seq = ANY($4::int8[]) AND (status = 'queued' OR (status = 'running' AND lease_until < $2))
  RETURNING *`;

/** The fenced update of a batch of completions; returns the runs whose lease still held. */
const COMPLETE = `
  UPDATE runs r SET status = c.status, reply = c.reply, error = c.error, finished_at = c.finished_at,
                    lease_owner = NULL, lease_until = NULL, delivery_status = c.delivery_status,
                    delivery_channel = c.delivery_channel, delivery_to = c.delivery_to,
                    delivery_reason = c.delivery_reason
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::text[],
                $8::text[], $9::text[], $10::text[])
         AS c(id, owner, status, reply, error, finished_at, delivery_status, delivery_channel,
              delivery_to, delivery_reason)
   WHERE r.id = c.id AND r.lease_owner = c.owner AND r.status = 'running'
  RETURNING r.id`;

/** The session keys' locks, taken in sorted order (no deadlock) before their heads are read. */
const LOCK_KEYS = 'SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM unnest($1::text[]) AS k';

/**
 * Moves the heads of these keys (their head finished) to each key's oldest
 * unfinished run; one index probe per key, however long its backlog. A key with
 * nothing left loses its head row. Counts the keys that got a new head. The
 * delete and the upsert touch different keys, so one statement may do both.
 */
const MOVE_HEADS = `
  WITH next AS (
    SELECT r.session_key, r.seq, r.source FROM unnest($1::text[]) AS k CROSS JOIN LATERAL (
      SELECT session_key, seq, source FROM runs
       WHERE session_key = k AND status IN ('queued', 'running') ORDER BY seq LIMIT 1) r),
  dropped AS (
    DELETE FROM run_heads
     WHERE session_key = ANY($1::text[]) AND session_key NOT IN (SELECT session_key FROM next)),
  moved AS (
    INSERT INTO run_heads (session_key, seq, source) SELECT session_key, seq, source FROM next
    ON CONFLICT (session_key) DO UPDATE SET seq = excluded.seq, source = excluded.source
    RETURNING 1)
  SELECT count(*)::int AS n FROM moved`;

/**
 * Takes the claim lock of each source that has a cap, in a fixed order, so the
 * running counts read next are exact for them across replicas. Uncapped sources
 * take no lock: their claims proceed in parallel.
 */
async function lockCappedSources(tx: Tx, caps: RunCaps): Promise<void> {
  if (caps === noCaps) return;
  const { rows } = await tx.query<{ source: string }>(`${HEAD_SOURCES_CTE}
    SELECT source FROM sources WHERE source IS NOT NULL ORDER BY source`);
  const capped = rows.map((row) => row.source).filter((source) => caps(source) !== undefined);
  if (capped.length === 0) return;
  await tx.query(
    'SELECT count(pg_advisory_xact_lock(hashtextextended($2 || k, 0))) FROM unnest($1::text[]) AS k',
    [capped, CAPPED_SOURCE_LOCK],
  );
}

/** Leases up to `request.limit` runnable heads to `owner`, inside the caller's transaction. */
async function claimInTx(tx: Tx, owner: string, request: ClaimRequest): Promise<ClaimedRun[]> {
  const { now, leaseMs, limit } = request;
  const caps = request.caps ?? noCaps;
  await lockCappedSources(tx, caps);
  // Both at once (the connection pipelines): HEADS counts the running runs itself.
  const [counted, oldest] = await Promise.all([
    tx.query<{ source: string; n: number }>(RUNNING_BY_SOURCE, [now]),
    tx.query<{ seq: number }>(HEADS, [limit, now]),
  ]);
  const running = new Map(counted.rows.map((row) => [row.source, row.n]));
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
  return leased.rows.sort((a, b) => (order.get(a.seq) ?? 0) - (order.get(b.seq) ?? 0)).map(toClaimedRun);
}

export class PgRunQueue implements RunQueueStore {
  /** Completions arriving in the same event-loop turn commit together. */
  private readonly completions: GroupCommit<CompletionItem, CompletionOutcome>;

  constructor(private readonly pool: pg.Pool) {
    this.completions = new GroupCommit(
      (batch) => inTransaction(this.pool, (tx) => this.completeBatch(tx, batch)),
      {
        wrapError: (error) =>
          error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error),
      },
    );
  }

  async claimRuns(
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    caps: RunCaps = noCaps,
  ): Promise<ClaimedRun[]> {
    if (limit <= 0) return [];
    return inTransaction(this.pool, (tx) => claimInTx(tx, owner, { now, leaseMs, limit, caps }));
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

  async completeRun(completion: RunCompletion): Promise<boolean> {
    return (await this.completions.submit({ completion })).recorded;
  }

  completeAndClaim(completion: RunCompletion, claim: ClaimRequest): Promise<CompletionOutcome> {
    return this.completions.submit({ completion, claim });
  }

  /** Settles once every completion submitted so far is committed or refused. */
  drain(): Promise<void> {
    return this.completions.drain();
  }

  /** Records a batch of completions, then the claims they ask for, in one transaction (store/rules/completion.ts). */
  private async completeBatch(tx: Tx, items: readonly CompletionItem[]): Promise<CompletionOutcome[]> {
    const { recorded, moved } = await this.recordBatch(tx, items);
    const claimed = new Map<string, ClaimedRun[]>();
    let taken = 0;
    for (const { owner, request } of claimsOf(items)) {
      const runs = await claimInTx(tx, owner, request);
      claimed.set(owner, runs);
      taken += runs.length;
    }
    // Keys whose next run moved up and that this batch may not have taken itself: one hint
    // for the batch to every replica (they also poll).
    if (moved > taken) await tx.query(`SELECT pg_notify('${WORK_CHANNEL}', '')`);
    const next = share(items, claimed);
    return items.map((_, index) => ({ recorded: recorded[index] as boolean, next: next[index] ?? [] }));
  }

  /** The completions' writes: which of them still held their lease, and how many keys' heads moved up. */
  private async recordBatch(
    tx: Tx,
    items: readonly CompletionItem[],
  ): Promise<{ recorded: boolean[]; moved: number }> {
    const batch = items.map((item) => item.completion);
    const { rows } = await tx.query<{ id: string }>(COMPLETE, [
      batch.map((c) => c.runId),
      batch.map((c) => c.owner),
      batch.map((c) => c.status),
      batch.map((c) => c.reply),
      batch.map((c) => c.error),
      batch.map((c) => c.finishedAt),
      batch.map((c) => c.delivery.status),
      batch.map((c) => c.delivery.channel),
      batch.map((c) => c.delivery.to),
      batch.map((c) => c.delivery.reason),
    ]);
    const done = new Set(rows.map((row) => row.id));
    const recorded = batch.map((c) => done.has(c.runId));
    const writes = planCompletions(batch.filter((_, index) => recorded[index]));
    if (writes.headKeys.length === 0) return { recorded, moved: 0 };
    // The keys' locks order this against an accept of the same key on another replica, so
    // no run is left headless. A statement of its own: the next one's snapshot then sees
    // every run of these keys committed before the locks were granted.
    // The rest goes out at once (the pool's connections pipeline): the server still runs
    // them one by one in this order, and one round trip brings every answer back.
    const keys = [...writes.headKeys].sort();
    const [, moved] = await Promise.all([
      tx.query(LOCK_KEYS, [keys]),
      tx.query<{ n: number }>(MOVE_HEADS, [keys]),
      appendTranscriptRowsInTx(tx, writes.transcript),
      insertEventsInTx(tx, writes.events),
      enqueueDeliveriesInTx(tx, writes.deliveries),
      armCallbacksInTx(tx, writes.callbacksDue),
    ]);
    return { recorded, moved: moved.rows[0]?.n ?? 0 };
  }
}
