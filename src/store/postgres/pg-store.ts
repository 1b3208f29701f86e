/**
 * The scale-out store: any number of replicas on one PostgreSQL database
 * (docs/postgres.md). It implements the same Store as SQLite; what differs is said
 * where it differs.
 *
 * Start: the pool connects and `migrate` brings the schema up to date under an
 * advisory lock. Every method waits for that; if the database cannot be reached
 * the first call fails with an error naming `store.url` (the CLI exits 1).
 *
 * Group commit (store/rules/group-commit.ts): accepts that arrive in the same
 * event-loop turn are committed in one pipelined transaction (accept.ts) — their
 * runs in one multi-row INSERT — and the batch sends one NOTIFY, not one per row
 * (NOTIFY serialises commits server-wide). Should the batch fail, it is rolled
 * back whole and replayed one accept per transaction, as on SQLite.
 */

import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { CommitSignals } from '../commit-signals.js';
import { type CommittedSignal, LocalCommits, withRemote } from '../committed.js';
import {
  type EventRow,
  FINISHED_ROW_EXTRA_MS,
  RUN_VIEW_COLUMNS,
  type RunRow,
  toEventView,
  toRunView,
} from '../rows.js';
import { GroupCommit } from '../rules/group-commit.js';
import type { BudgetStore } from '../types.js';
import {
  type AcceptResult,
  type Action,
  type AdminStore,
  type CallbackOutboxStore,
  type Committed,
  type DeliveryOutboxStore,
  type EventView,
  type IdempotencyClaim,
  type ListEventsOptions,
  type PruneBatch,
  type PruneKind,
  type RunQueueStore,
  type RunStepsStore,
  type RunView,
  type SessionStore,
  type Store,
  type StoreCounts,
  type StoredAnswer,
  StoreUnavailableError,
} from '../types.js';
import { acceptBatch, type PendingAccept } from './accept.js';
import { PgAdmin } from './admin.js';
import { afterReady } from './after-ready.js';
import { PgBudgets } from './budgets.js';
import { PgCallbacks, pruneCallbacksInTx } from './callbacks.js';
import { createPool, inPipelinedTransaction, inTransaction, type PoolSettings, read } from './db.js';
import { migrate } from './migrations.js';
import { PgOutbox } from './outbox.js';
import { redactUrl } from './redact-url.js';
import { PgReplicas } from './replicas.js';
import { PgRetention } from './retention.js';
import { PgRunQueue } from './run-queue.js';
import { PgSessions } from './sessions.js';
import { PgSteps } from './steps.js';
import { PgTxWriter } from './tx-writer.js';
import { WORK_CHANNEL, WorkListener } from './work-listener.js';

export interface PgStoreOptions extends PoolSettings {
  /** Lease of an outbox item held by this replica (ms); expires if the replica dies. */
  deliveryLeaseMs?: number;
  clock?: () => number;
}

/** The database at `store.url` could not be reached or migrated at start. */
export class StoreStartError extends Error {}

export class PgStore implements Store {
  readonly pool: pg.Pool;
  /** Settles once the schema is up to date; every method waits for it. */
  readonly ready: Promise<void>;
  /**
   * Accepts arriving while a transaction is open wait and go together in the
   * next one: parallel small transactions would only queue on the same session
   * locks and cost a commit each.
   */
  private readonly accepts: GroupCommit<PendingAccept, AcceptResult>;
  private closed = false;
  // Each part waits for the schema before its first query (after-ready.ts).
  readonly sessions: SessionStore;
  readonly runs: RunQueueStore;
  readonly outbox: DeliveryOutboxStore;
  readonly callbacks: CallbackOutboxStore;
  readonly admin: AdminStore;
  readonly steps: RunStepsStore;
  readonly budgets: BudgetStore;
  /** The run queue itself, for close (its group commit drains). */
  private readonly runQueue: PgRunQueue;
  private readonly retention: PgRetention;
  private readonly listener: WorkListener;
  /** Streamed runs' pieces and the lockout ledger, shared by every replica (replicas.ts). */
  readonly replicas: PgReplicas;
  private readonly commits = new LocalCommits();
  /** This replica's commits, and `runs` from every replica's NOTIFY (accept.ts, run-queue.ts). */
  readonly committed: CommittedSignal = withRemote(this.commits, (kind, listener) =>
    kind === 'runs' ? this.listener.subscribe(WORK_CHANNEL, () => listener()) : undefined,
  );
  /** What the parts tell of their commits, and so the accepts' group commit (commit-signals.ts). */
  private readonly signals = new CommitSignals(this.commits);

  constructor(options: PgStoreOptions) {
    this.pool = createPool(options);
    this.ready = this.start(options.url);
    this.ready.catch(() => {}); // reported by the first call that waits for it
    this.accepts = new GroupCommit(
      async (batch) => {
        await this.ready;
        const results = await inPipelinedTransaction(this.pool, (tx) => acceptBatch(tx, batch));
        this.signals.accepted(batch, results);
        return results;
      },
      {
        wrapError: (error) =>
          error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error),
      },
    );
    this.listener = new WorkListener(options.url);
    this.replicas = new PgReplicas(this.pool, this.listener, this.ready);
    const signals = this.signals;
    this.sessions = afterReady(this.ready, new PgSessions(this.pool, signals));
    this.runQueue = new PgRunQueue(this.pool, signals);
    this.runs = afterReady(this.ready, this.runQueue);
    this.callbacks = afterReady(this.ready, new PgCallbacks(this.pool, signals));
    this.admin = afterReady(this.ready, new PgAdmin(this.pool, signals));
    this.steps = afterReady(this.ready, new PgSteps(this.pool, (kind) => this.commits.emit(kind)));
    this.budgets = afterReady(this.ready, new PgBudgets(this.pool, signals));
    this.retention = new PgRetention(this.pool);
    const outbox = new PgOutbox(
      this.pool,
      {
        owner: `pg_${randomUUID()}`,
        leaseMs: options.deliveryLeaseMs ?? 60_000,
        clock: options.clock ?? Date.now,
      },
      signals,
    );
    this.outbox = afterReady(this.ready, outbox);
  }

  private async start(url: string): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new StoreStartError(
        `store.url: cannot connect to PostgreSQL at ${redactUrl(url)}: ${(error as Error).message || (error as { code?: string }).code}`,
      );
    }
    try {
      await migrate(client);
    } catch (error) {
      throw new StoreStartError(
        `store.url: cannot create or migrate the schema at ${redactUrl(url)}: ${(error as Error).message}`,
      );
    } finally {
      client.release();
    }
  }

  accept(
    actions: Action[],
    render: (committed: Committed[]) => StoredAnswer,
    idempotency?: IdempotencyClaim,
  ): Promise<AcceptResult> {
    if (this.closed) return Promise.reject(new StoreUnavailableError(new Error('the store is closed')));
    return this.accepts.submit({ actions, render, idempotency });
  }

  async getRun(runId: string): Promise<RunView | undefined> {
    await this.ready;
    const [row] = await read<RunRow>(this.pool, `SELECT ${RUN_VIEW_COLUMNS} FROM runs WHERE id = $1`, [
      runId,
    ]);
    if (!row) return undefined;
    return toRunView(row);
  }

  async unfinishedRuns(runIds: readonly string[]): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    await this.ready;
    const rows = await read<{ id: string }>(
      this.pool,
      "SELECT id FROM runs WHERE id = ANY($1::text[]) AND status IN ('queued', 'running', 'waiting')",
      [runIds],
    );
    return new Set(rows.map((row) => row.id));
  }

  async listEvents(sessionKey: string, options: ListEventsOptions): Promise<EventView[] | undefined> {
    await this.ready;
    let afterSeq = 0;
    if (options.after !== undefined) {
      const [found] = await read<{ seq: number }>(
        this.pool,
        'SELECT seq FROM events WHERE id = $1 AND session_key = $2',
        [options.after, sessionKey],
      );
      if (!found) return undefined;
      afterSeq = found.seq;
    }
    const rows = await read<EventRow>(
      this.pool,
      'SELECT id, ts, text, source, status, token_id FROM events WHERE session_key = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [sessionKey, afterSeq, options.limit],
    );
    return rows.map(toEventView);
  }

  async consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): Promise<number> {
    await this.ready;
    return inTransaction(this.pool, (tx) => new PgTxWriter(tx).consumeEvents(sessionKey, eventIds, now));
  }

  async counts(): Promise<StoreCounts> {
    await this.ready;
    // Each condition is its partial index's own (runs_active, deliveries_pending).
    const [row] = await read<{ queued: number; running: number; pending: number }>(
      this.pool,
      `SELECT
         (SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running') AND status = 'queued')::int AS queued,
         (SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running') AND status = 'running')::int AS running,
         (SELECT COUNT(*) FROM deliveries WHERE status = 'pending')::int AS pending`,
      [],
    );
    return {
      runsQueued: row?.queued ?? 0,
      runsRunning: row?.running ?? 0,
      deliveriesPending: row?.pending ?? 0,
    };
  }

  async pruneIdempotency(olderThan: number): Promise<number> {
    await this.ready;
    return inTransaction(this.pool, async (tx) => {
      const result = await tx.query('DELETE FROM idempotency WHERE created_at <= $1', [olderThan]);
      // Finished outbox rows are internal (the run or heartbeat keeps its delivery record):
      // kept a week for inspection, then dropped so the table does not only grow.
      await tx.query(`DELETE FROM deliveries WHERE status <> 'pending' AND updated_at <= $1`, [
        olderThan - FINISHED_ROW_EXTRA_MS,
      ]);
      await pruneCallbacksInTx(tx, olderThan - FINISHED_ROW_EXTRA_MS);
      return result.rowCount ?? 0;
    });
  }

  async pruneBatch(kind: PruneKind, olderThan: number, limit: number): Promise<PruneBatch> {
    await this.ready;
    return this.retention.pruneBatch(kind, olderThan, limit);
  }

  /** Settles once the LISTEN behind `committed` is in place (tests wait for it). */
  listening(): Promise<void> {
    return this.listener.listening();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.listener.close();
    // Accepts and completions already taken are committed (or refused) before the pool goes.
    await this.accepts.drain();
    await this.runQueue.drain();
    await this.pool.end();
  }
}
