/**
 * The run queue on SQLite: leases, per-session-key ordering, completion.
 * Every write is one IMMEDIATE transaction, fenced by the lease owner, so a
 * worker that lost its lease can never record a result. Completions are
 * group-committed (store/rules/group-commit.ts).
 */

import type Database from 'better-sqlite3';
import type { CommitSignals } from '../commit-signals.js';
import { HEAD_SOURCES_SQL, noCaps, pickFairly, type RunCaps } from '../fair-share.js';
import { ATTACHMENT_COLUMNS, type AttachmentRow, toAttachment } from '../rows.js';
import { planSpend } from '../rules/budgets.js';
import {
  deferRunSql,
  deferral,
  dueSql,
  HOLD_LISTS,
  type HoldDialect,
  holdsAny,
  holdValues,
  nextNotBeforeSql,
  notHeldSql,
} from '../rules/claim-hold.js';
import { type CompletionItem, claimsOf, outcomesOf, planCompletions } from '../rules/completion.js';
import { GroupCommit } from '../rules/group-commit.js';
import { USAGE_COLUMNS, usageValues } from '../rules/usage.js';
import { type QueuedRow, toClaimedRun } from '../run-rows.js';
import {
  type Attachment,
  type ClaimedRun,
  type ClaimHold,
  type ClaimRequest,
  type CompletionOutcome,
  type RunCompletion,
  type RunQueueStore,
  StoreUnavailableError,
} from '../types.js';
import { BOUND_LIMIT } from './bound-limit.js';
import type { SqliteTxWriter } from './tx-writer.js';

/** The columns of a `QueuedRow`, for a lease's RETURNING (which sees the row as the lease left it). */
const QUEUED_COLUMNS = `id, agent_id, session_key, main_session_key, name, message, model,
  thinking, timeout_seconds, wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at,
  started_at, attempts, trace_parent, attachments, stream, held_ms, hook_id, token_id`;

/** A claim's hold on SQLite: each list bound as a JSON array, by name (store/rules/claim-hold.ts). */
const HOLD_SQL: HoldDialect = {
  inList: (column, list) => `${column} IN (SELECT value FROM json_each(@${list}))`,
  hasPrefix: (column, list) =>
    `EXISTS (SELECT 1 FROM json_each(@${list}) p WHERE substr(${column}, 1, length(p.value)) = p.value)`,
};

/** The hold's lists as `runnableHeld` binds them. */
function holdParams(hold: ClaimHold): Record<string, string> {
  const values = holdValues(hold);
  return Object.fromEntries(HOLD_LISTS.map((list, index) => [list, JSON.stringify(values[index])]));
}

export class SqliteRunQueue implements RunQueueStore {
  private readonly s;
  /** Completions arriving in the same event-loop turn commit together. */
  private readonly completions: GroupCommit<CompletionItem, CompletionOutcome>;
  private readonly claim;

  constructor(
    private readonly db: Database.Database,
    /** A completion's writes that other parts own (store/rules/tx-writer.ts). */
    private readonly writer: SqliteTxWriter,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
  ) {
    this.s = {
      attachments: db.prepare<[string], AttachmentRow>(
        `SELECT ${ATTACHMENT_COLUMNS} FROM run_attachments WHERE run_id = ? ORDER BY idx`,
      ),
      // Runs executing now (an expired lease is claimable, so it does not count), per
      // source, read through runs_running (the running runs only).
      runningBySource: db.prepare<[number], { source: string; n: number }>(
        `SELECT source, COUNT(*) AS n FROM runs WHERE status = 'running' AND lease_until >= ? GROUP BY source`,
      ),
      headSources: db.prepare<[], { source: string }>(HEAD_SOURCES_SQL),
      // The runnable heads (oldest unfinished run of a session key) of one source, oldest
      // first: reads that source's heads in order, so a hot key with thousands queued costs one row.
      // Only the seq: the columns of the heads picked come back from their lease below (reading
      // every column of every candidate made this query 3× slower, measured).
      // A run deferred past now is left (store/rules/claim-hold.ts).
      runnable: db
        .prepare<[string, number, number, number], number>(
          `SELECT r.seq FROM run_heads h JOIN runs r ON r.seq = h.seq
            WHERE h.source = ? AND (r.status = 'queued' OR (r.status = 'running' AND r.lease_until < ?))
              AND ${dueSql('r', '?')}
            ORDER BY h.seq LIMIT ${BOUND_LIMIT}`,
        )
        .pluck(),
      // The same, leaving the runs a claim's hold names too: a statement of its own, so a claim
      // without a hold reads as it always did.
      runnableHeld: db
        .prepare<[Record<string, string | number>], number>(
          `SELECT r.seq FROM run_heads h JOIN runs r ON r.seq = h.seq
            WHERE h.source = @source AND (r.status = 'queued' OR (r.status = 'running' AND r.lease_until < @now))
              AND ${dueSql('r', '@now')} AND ${notHeldSql('r', HOLD_SQL)}
            ORDER BY h.seq LIMIT CAST(@room AS INTEGER)`,
        )
        .pluck(),
      defer: db.prepare(deferRunSql(() => '?', 'MAX')),
      nextNotBefore: db.prepare<[number], { at: number | null }>(nextNotBeforeSql('?')),
      dropHead: db.prepare('DELETE FROM run_heads WHERE session_key = ?'),
      nextHead: db.prepare(
        `INSERT OR IGNORE INTO run_heads (session_key, seq, source)
           SELECT session_key, seq, source FROM runs
            WHERE session_key = ? AND status IN ('queued', 'running') ORDER BY seq LIMIT 1`,
      ),
      lease: db.prepare<[string, number, number, number], QueuedRow>(
        `UPDATE runs SET status = 'running', lease_owner = ?, lease_until = ?,
                         started_at = COALESCE(started_at, ?), attempts = attempts + 1, not_before = NULL
          WHERE seq = ? RETURNING ${QUEUED_COLUMNS}`,
      ),
      renew: db.prepare(
        `UPDATE runs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND status = 'running'`,
      ),
      // A clean stop hands the run back: that claim does not count as an interrupted attempt.
      release: db.prepare(
        `UPDATE runs SET status = 'queued', lease_owner = NULL, lease_until = NULL, attempts = MAX(attempts - 1, 0)
          WHERE id = ? AND lease_owner = ? AND status = 'running'`,
      ),
      running: db.prepare<[], { id: string; lease_owner: string | null }>(
        `SELECT id, lease_owner FROM runs WHERE status = 'running'`,
      ),
      requeue: db.prepare(
        `UPDATE runs SET status = 'queued', lease_owner = NULL, lease_until = NULL WHERE id = ? AND status = 'running'`,
      ),
      complete: db.prepare(
        `UPDATE runs SET status = ?, reply = ?, error = ?, finished_at = ?, lease_owner = NULL, lease_until = NULL,
                         delivery_status = ?, delivery_channel = ?, delivery_to = ?, delivery_reason = ?,
                         ${USAGE_COLUMNS.split(', ')
                           .map((column) => `${column} = ?`)
                           .join(', ')}
          WHERE id = ? AND lease_owner = ? AND status = 'running'`,
      ),
    };
    this.claim = db.transaction((request: ClaimRequest, owner: string) => this.claimInTx(request, owner));
    const completeBatch = db.transaction((batch: readonly CompletionItem[]) => this.completeBatch(batch));
    this.completions = new GroupCommit(
      (batch) => {
        const outcomes = completeBatch.immediate(batch);
        signals.runsFinished(batch, outcomes);
        return outcomes;
      },
      {
        wrapError: (error) => new StoreUnavailableError(error),
      },
    );
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
    return this.claim.immediate({ now, leaseMs, limit, caps, ...(hold ? { hold } : {}) }, owner);
  }

  /** Leases up to `request.limit` runnable heads to `owner`, inside the caller's transaction. */
  private claimInTx(request: ClaimRequest, owner: string): ClaimedRun[] {
    const { now, leaseMs, limit } = request;
    const caps = request.caps ?? noCaps;
    const running = new Map(this.s.runningBySource.all(now).map((row) => [row.source, row.n]));
    const held = holdsAny(request.hold) ? holdParams(request.hold) : undefined;
    const runnable = (source: string, room: number) =>
      held
        ? this.s.runnableHeld.all({ ...held, source, now, room })
        : this.s.runnable.all(source, now, now, room);
    const candidates = this.s.headSources.all().map(({ source }) => {
      const cap = caps(source);
      const room = cap === undefined ? limit : Math.min(limit, cap - (running.get(source) ?? 0));
      return { source, heads: room > 0 ? runnable(source, room) : [] };
    });
    return pickFairly(candidates, running, caps, limit, (seq) => seq).map((seq) => {
      return toClaimedRun(this.s.lease.get(owner, now + leaseMs, now, seq) as QueuedRow);
    });
  }

  async renewLeases(owner: string, runIds: readonly string[], until: number): Promise<void> {
    if (runIds.length === 0) return;
    this.db
      .transaction(() => {
        for (const id of runIds) this.s.renew.run(until, id, owner);
      })
      .immediate();
  }

  async releaseRun(runId: string, owner: string): Promise<boolean> {
    const released = this.s.release.run(runId, owner).changes === 1;
    this.signals.runsRequeued(released ? 1 : 0);
    return released;
  }

  async deferRun(runId: string, owner: string, notBefore: number, now: number): Promise<boolean> {
    const { heldMs } = deferral(now, notBefore);
    // Not a requeue signal: the run is not claimable before notBefore, when the worker's
    // timer (nextNotBefore) looks again.
    return this.s.defer.run(notBefore, heldMs, runId, owner).changes === 1;
  }

  async nextNotBefore(now: number): Promise<number | null> {
    return this.s.nextNotBefore.get(now)?.at ?? null;
  }

  async requeueOrphans(isOwnerAlive: (owner: string) => boolean): Promise<string[]> {
    const orphans = this.s.running
      .all()
      .filter((row) => row.lease_owner === null || !isOwnerAlive(row.lease_owner));
    this.db
      .transaction(() => {
        for (const row of orphans) this.s.requeue.run(row.id);
      })
      .immediate();
    this.signals.runsRequeued(orphans.length);
    return orphans.map((row) => row.id);
  }

  async loadAttachments(runId: string): Promise<Attachment[]> {
    return this.s.attachments.all(runId).map(toAttachment);
  }

  async completeRun(completion: RunCompletion): Promise<boolean> {
    return (await this.completions.submit({ completion })).recorded;
  }

  completeAndClaim(completion: RunCompletion, claim: ClaimRequest): Promise<CompletionOutcome> {
    return this.completions.submit({ completion, claim });
  }

  /** Settles once every completion submitted so far is committed. */
  drain(): Promise<void> {
    return this.completions.drain();
  }

  /** Records a batch of completions, then the claims they ask for, in one transaction (store/rules/completion.ts). */
  private completeBatch(items: readonly CompletionItem[]): CompletionOutcome[] {
    const batch = items.map((item) => item.completion);
    const recorded = batch.map(
      (c) =>
        this.s.complete.run(
          c.status,
          c.reply,
          c.error,
          c.finishedAt,
          c.delivery.status,
          c.delivery.channel,
          c.delivery.to,
          c.delivery.reason,
          ...usageValues(c.usage),
          c.runId,
          c.owner,
        ).changes === 1,
    );
    const recordedOnes = batch.filter((_, index) => recorded[index]);
    const writes = planCompletions(recordedOnes);
    for (const key of writes.headKeys) {
      this.s.dropHead.run(key);
      this.s.nextHead.run(key);
    }
    const w = this.writer;
    w.appendTranscript(writes.transcript);
    w.insertEvents(writes.events);
    for (const { item, now } of writes.deliveries) w.enqueueDelivery(item, now);
    for (const { runId, now, traceParent } of writes.callbacksDue) w.armCallback(runId, now, traceParent);
    w.addSpend(planSpend(recordedOnes));
    const alerts = batch.map((c, index) =>
      recorded[index] && c.alert ? w.enqueueAlert(c.alert, c.finishedAt) : undefined,
    );
    const claimed = new Map(
      claimsOf(items).map(({ owner, request }) => [owner, this.claimInTx(request, owner)]),
    );
    return outcomesOf(items, recorded, alerts, claimed);
  }
}
