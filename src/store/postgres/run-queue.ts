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
 * pipelined transaction (db.ts) of a fixed number of statements whatever its
 * size, and sends at most one NOTIFY — only when a key's next run moved up, and
 * only as a hint: every replica also polls. Its writes are one statement
 * behind the fence (record-completions.ts) and go out with the claim's reads
 * (claim.ts); the lease goes with the COMMIT: two round trips in all
 * (docs/postgres.md, Group commit).
 */
import type pg from 'pg';
import type { CommitSignals } from '../commit-signals.js';
import { noCaps, type RunCaps } from '../fair-share.js';
import { ATTACHMENT_COLUMNS, type AttachmentRow, toAttachment } from '../rows.js';
import { deferRunSql, deferral, nextNotBeforeSql } from '../rules/claim-hold.js';
import { type CompletionItem, claimsOf, outcomesOf, planCompletions } from '../rules/completion.js';
import { GroupCommit } from '../rules/group-commit.js';
import {
  type AlertOutcome,
  type Attachment,
  type ClaimedRun,
  type ClaimHold,
  type ClaimRequest,
  type CompletionOutcome,
  type RunCompletion,
  type RunQueueStore,
  StoreUnavailableError,
} from '../types.js';
import { enqueueAlertsInTx } from './alerts.js';
import { sendClaimReads, sendLease } from './claim.js';
import { inPipelinedTransaction, inTransaction, type Pipeline, readPrepared } from './db.js';
import { recordCompletions } from './record-completions.js';
import { WORK_CHANNEL } from './work-listener.js';

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

const NOTIFY_WORK = `SELECT pg_notify('${WORK_CHANNEL}', '')`;

const DEFER_RUN = deferRunSql((n) => `$${n}`, 'GREATEST');
const NEXT_NOT_BEFORE = nextNotBeforeSql('$1');

/** What a completion batch leaves for after its COMMIT: which were recorded, and each owner's leased runs. */
interface BatchRecord {
  recorded: boolean[];
  /** What became of each recorded completion's alert (docs/alerts.md). */
  alerts: (AlertOutcome | undefined)[];
  leased: Map<string, Promise<ClaimedRun[]>>;
}

export class PgRunQueue implements RunQueueStore {
  /** Completions arriving in the same event-loop turn commit together. */
  private readonly completions: GroupCommit<CompletionItem, CompletionOutcome>;

  constructor(
    private readonly pool: pg.Pool,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
  ) {
    this.completions = new GroupCommit((batch) => this.commitCompletions(batch), {
      wrapError: (error) =>
        error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error),
    });
  }

  async claimRuns(
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    caps: RunCaps = noCaps,
    hold?: ClaimHold,
  ): Promise<ClaimedRun[]> {
    if (limit <= 0) return [];
    const lease = await inPipelinedTransaction(this.pool, async (tx) => {
      const reads = sendClaimReads(tx, { now, leaseMs, limit, caps, ...(hold ? { hold } : {}) });
      await tx.flush();
      return sendLease(tx, owner, reads);
    });
    return lease.runs;
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
    const released = result.rowCount === 1;
    this.signals.runsRequeued(released ? 1 : 0);
    if (released) await this.pool.query(NOTIFY_WORK).catch(() => {});
    return released;
  }

  async deferRun(runId: string, owner: string, notBefore: number, now: number): Promise<boolean> {
    const { heldMs } = deferral(now, notBefore);
    // No NOTIFY: the run is not claimable before notBefore, when every replica's timer
    // (nextNotBefore, read at its scans) looks again.
    const result = await inTransaction(this.pool, (tx) =>
      tx.query(DEFER_RUN, [notBefore, heldMs, runId, owner]),
    );
    return result.rowCount === 1;
  }

  async nextNotBefore(now: number): Promise<number | null> {
    const rows = await readPrepared<{ at: number | string | null }>(this.pool, NEXT_NOT_BEFORE, [now]);
    const at = rows[0]?.at;
    return at === null || at === undefined ? null : Number(at);
  }

  /**
   * Nothing to do on PostgreSQL: replicas cannot see each other's pids, so a run
   * left by a dead replica becomes claimable when its lease expires.
   */
  async requeueOrphans(): Promise<string[]> {
    return [];
  }

  async loadAttachments(runId: string): Promise<Attachment[]> {
    const rows = await readPrepared<AttachmentRow>(
      this.pool,
      `SELECT ${ATTACHMENT_COLUMNS} FROM run_attachments WHERE run_id = $1 ORDER BY idx`,
      [runId],
    );
    return rows.map(toAttachment);
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
  private async commitCompletions(items: readonly CompletionItem[]): Promise<CompletionOutcome[]> {
    const record = await inPipelinedTransaction(this.pool, (tx) => completeBatch(tx, items));
    // Committed: every lease's answer is in.
    const claimed = new Map<string, ClaimedRun[]>();
    for (const [owner, runs] of record.leased) claimed.set(owner, await runs);
    const outcomes = outcomesOf(items, record.recorded, record.alerts, claimed);
    this.signals.runsFinished(items, outcomes);
    return outcomes;
  }
}

/**
 * The batch's statements, in two round trips: the keys' locks, the writes,
 * the heads' move and the claim's reads; then the lease (and the NOTIFY) with
 * the COMMIT. The keys' locks order the batch against an accept of the same
 * key on another replica, so no run is left headless; the heads' move is a
 * statement of its own after the locks and the writes, so its snapshot sees
 * every run of these keys committed before the locks were granted, and these
 * completions' own updates.
 */
async function completeBatch(tx: Pipeline, items: readonly CompletionItem[]): Promise<BatchRecord> {
  const batch = items.map((item) => item.completion);
  const writes = planCompletions(batch);
  const keys = [...writes.headKeys].sort();
  tx.send(LOCK_KEYS, [keys]);
  const record = recordCompletions(batch, writes);
  const fenced = tx.send<{ id: string }>(record.text, record.values);
  const moved = tx.send<{ n: number }>(MOVE_HEADS, [keys]);
  const [first, ...others] = claimsOf(items);
  const reads = first && sendClaimReads(tx, first.request);
  await tx.flush();
  const done = new Set((await fenced).rows.map((row) => row.id));
  const recorded = batch.map((c) => done.has(c.runId));
  // Failed runs' alerts, for the completions recorded: the alerts' lock and the capped inserts
  // (alerts.ts), a round trip only in a batch that has one.
  const alerting = batch.flatMap((c, index) =>
    recorded[index] && c.alert ? [{ index, alert: c.alert, now: c.finishedAt }] : [],
  );
  const outcomes = await enqueueAlertsInTx((text, values) => tx.send(text, values), alerting);
  const alerts = batch.map((): AlertOutcome | undefined => undefined);
  alerting.forEach(({ index }, n) => {
    alerts[index] = outcomes[n];
  });
  const leased = new Map<string, Promise<ClaimedRun[]>>();
  let taken = 0;
  if (first && reads) {
    const lease = await sendLease(tx, first.owner, reads);
    leased.set(first.owner, lease.runs);
    taken += lease.taken;
  }
  // Another owner's claim (several workers on one store): its reads run after the
  // leases before it, so they do not find the heads those took.
  for (const { owner, request } of others) {
    const more = sendClaimReads(tx, request);
    await tx.flush();
    const lease = await sendLease(tx, owner, more);
    leased.set(owner, lease.runs);
    taken += lease.taken;
  }
  // Keys whose next run moved up and that this batch may not have taken itself: one hint
  // for the batch to every replica (they also poll).
  if (((await moved).rows[0]?.n ?? 0) > taken) tx.send(NOTIFY_WORK);
  return { recorded, alerts, leased };
}
