/**
 * The embedded default store: one SQLite file in WAL mode through better-sqlite3.
 *
 * Durability: `accept` resolves only after its transaction committed. With
 * `synchronous = FULL` (the default) COMMIT returns once the WAL holding it is synced
 * to the disk, so an answered request survives power loss, and group commit (below)
 * shares that sync among the requests of a turn; `synchronous = NORMAL` hands the WAL
 * write to the OS only, which survives the gateway process being killed but not the
 * machine losing power (docs/durability.md, and docs/performance.md for why the sync
 * stays inside COMMIT rather than on a thread of its own).
 *
 * Group commit (store/rules/group-commit.ts): accepts that arrive in the same
 * event-loop turn are committed together in one transaction, and so are run
 * completions; one commit per request or per run was where the time went.
 *
 * WAL checkpoints run on a thread of their own (wal-checkpointer.ts), not in the
 * COMMIT of whichever request crossed the threshold: copying ~40 MB of WAL there
 * stalled every request in flight. The WAL starts over once it holds
 * `RESTART_PAGES`; the gateway's connection checkpoints by itself only past
 * `SAFETY_NET_PAGES`, should the thread be unable to.
 *
 * One writer: an open store holds the file's writer lock (writer-lock.ts), so a
 * second gateway on the same file refuses to start, and the files and
 * directories it creates are private, 0600 and 0700 (private-files.ts); see
 * docs/operating.md, "The SQLite file".
 */
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { uuidv7 } from '../../util/ids.js';
import { CommitSignals } from '../commit-signals.js';
import { type CommittedSignal, LocalCommits } from '../committed.js';
import {
  type EventRow,
  FINISHED_ROW_EXTRA_MS,
  RUN_VIEW_COLUMNS,
  type RunRow,
  toEventView,
  toRunView,
} from '../rows.js';
import {
  EVENT_COLUMNS,
  eventValues,
  type NewestPending,
  type PendingAccept,
  type PendingWakes,
  planAccept,
  RUN_COLUMNS,
  replayOrConflict,
  runValues,
} from '../rules/accept.js';
import { GroupCommit } from '../rules/group-commit.js';
import {
  type AcceptResult,
  type Action,
  type Committed,
  type EventView,
  type IdempotencyClaim,
  type ListEventsOptions,
  type NewRun,
  type PruneBatch,
  type PruneKind,
  type RunView,
  type Store,
  type StoreCounts,
  type StoredAnswer,
  StoreUnavailableError,
} from '../types.js';
import { SqliteAdmin } from './admin.js';
import { SqliteAlerts } from './alerts.js';
import { BOUND_LIMIT } from './bound-limit.js';
import { SqliteCallbacks } from './callbacks.js';
import { MIGRATIONS } from './migrations.js';
import { SqliteOutbox } from './outbox.js';
import { createPrivateFile, makePrivateDir } from './private-files.js';
import { SOLE_REPLICA } from './replicas.js';
import { SqliteRetention } from './retention.js';
import { SqliteRoutes } from './routes.js';
import { SqliteRunQueue } from './run-queue.js';
import { SqliteSessions } from './sessions.js';
import { SqliteSteps } from './steps.js';
import { SqliteTxWriter } from './tx-writer.js';
import { WalCheckpointer } from './wal-checkpointer.js';
import { WriterLock } from './writer-lock.js';

export interface SqliteStoreOptions {
  path: string;
  /** Default "full": see the header comment. */
  synchronous?: 'normal' | 'full';
  /** How long a write waits for a lock held by another process before giving up (ms). */
  busyTimeoutMs?: number;
  /**
   * Test hook: false leaves the WAL to the connection's own autocheckpoint at
   * `SAFETY_NET_PAGES`, with no thread. Starting and stopping the thread was about
   * half the CPU of a test gateway's start and stop; the thread is tested on its
   * own (docs/development.md, "How the tests run"). Default true.
   */
  checkpointThread?: boolean;
}

/** WAL size (pages, 8 MiB) at which the checkpointer thread gets the WAL started over; see the header comment. */
const RESTART_PAGES = 2048;
/** A WAL file that grew past this while waiting to start over is cut back to it when it does. */
const WAL_FILE_LIMIT_BYTES = 32 * 1024 * 1024;
/** WAL size (pages, ~80 MiB) at which the gateway's own commit checkpoints: only if the thread cannot. */
const SAFETY_NET_PAGES = 20_000;

/** A boolean as SQLite's flag columns hold it. */
const sqliteFlag = (value: boolean) => (value ? 1 : 0);

export class SqliteStore implements Store {
  private readonly writerLock: WriterLock;
  private readonly db: Database.Database;
  private readonly checkpointer: WalCheckpointer | undefined;
  private readonly statements;
  /** Accepts arriving in the same event-loop turn commit together. */
  private readonly accepts: GroupCommit<PendingAccept, AcceptResult>;
  /**
   * Newest pending event per main session, for wake coalescing without a read
   * per wake. Valid because this store is the database's only writer (it holds
   * the writer lock); it is dropped whenever a transaction fails, so it never
   * holds an uncommitted event.
   */
  private readonly newestPending = new Map<string, NewestPending | undefined>();
  /** The newest pending events as the accept's rule asks for them: from the cache, else read. */
  private readonly pendingWakes: PendingWakes = {
    get: (sessionKey) =>
      this.newestPending.has(sessionKey)
        ? this.newestPending.get(sessionKey)
        : this.statements.newestPendingEvent.get(sessionKey),
    set: (sessionKey, newest) => this.newestPending.set(sessionKey, newest),
  };
  readonly sessions: SqliteSessions;
  readonly runs: SqliteRunQueue;
  readonly outbox: SqliteOutbox;
  readonly callbacks: SqliteCallbacks;
  readonly admin: SqliteAdmin;
  readonly steps: SqliteSteps;
  /** One process per file: it is the only replica (replicas.ts). */
  readonly replicas = SOLE_REPLICA;
  private readonly retention: SqliteRetention;
  private readonly writer: SqliteTxWriter;
  private readonly alerts: SqliteAlerts;
  private readonly commits = new LocalCommits();
  /** One process per file: the signal is this process's commits only. */
  readonly committed: CommittedSignal = this.commits;
  /** What the parts tell of their commits, and so the accepts' group commit (commit-signals.ts). */
  private readonly signals = new CommitSignals(this.commits);

  constructor(options: SqliteStoreOptions) {
    makePrivateDir(dirname(options.path));
    // Before the database is touched: a second gateway must not even migrate it.
    this.writerLock = WriterLock.take(options.path);
    let opened: Database.Database | undefined;
    const synchronous = options.synchronous === 'normal' ? 'NORMAL' : 'FULL';
    try {
      createPrivateFile(options.path); // 0600, and so are the -wal and -shm SQLite makes from it
      opened = new Database(options.path);
      opened.pragma('journal_mode = WAL');
      opened.pragma(`synchronous = ${synchronous}`);
      opened.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 2000}`);
      opened.pragma(`wal_autocheckpoint = ${SAFETY_NET_PAGES}`);
      opened.pragma(`journal_size_limit = ${WAL_FILE_LIMIT_BYTES}`);
      opened.pragma('mmap_size = 268435456');
      this.db = opened;
      this.migrate();
    } catch (error) {
      if (opened?.open) opened.close();
      this.writerLock.release();
      throw error;
    }

    // After the migrations: the thread's connection finds the database in WAL mode.
    this.checkpointer =
      options.checkpointThread === false
        ? undefined
        : new WalCheckpointer({ path: options.path, synchronous, restartPages: RESTART_PAGES });
    const db = this.db;
    this.statements = {
      findIdempotency: db.prepare<
        [string, string, number],
        { body_hash: string; status: number; body: string }
      >('SELECT body_hash, status, body FROM idempotency WHERE scope = ? AND key = ? AND created_at > ?'),
      saveIdempotency: db.prepare(
        'INSERT OR REPLACE INTO idempotency (scope, key, body_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      pruneIdempotency: db.prepare('DELETE FROM idempotency WHERE created_at <= ?'),
      // Each condition is its partial index's own (runs_active_by_session, which holds the status,
      // and deliveries_due): counted from the index.
      activeRuns: db.prepare<[], { status: 'queued' | 'running'; n: number }>(
        `SELECT status, COUNT(*) AS n FROM runs WHERE status IN ('queued', 'running') GROUP BY status`,
      ),
      pendingDeliveries: db.prepare<[], { n: number }>(
        `SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'`,
      ),
      newestPendingEvent: db.prepare<[string], { id: string; text: string }>(
        `SELECT id, text FROM events WHERE session_key = ? AND status = 'pending' ORDER BY seq DESC LIMIT 1`,
      ),
      insertEvent: db.prepare(`INSERT INTO events (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
      insertRun: db.prepare(
        `INSERT INTO runs (${RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertAttachment: db.prepare(
        'INSERT INTO run_attachments (run_id, idx, name, media_type, bytes, data) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      /** A retry's files: copied inside the database, the bytes never read into the process. */
      copyAttachments: db.prepare(
        `INSERT INTO run_attachments (run_id, idx, name, media_type, bytes, data)
         SELECT ?, idx, name, media_type, bytes, data FROM run_attachments WHERE run_id = ?`,
      ),
      /** Keeps the key's head when it has one: heads only move forward on completion. */
      addRunHead: db.prepare('INSERT OR IGNORE INTO run_heads (session_key, seq, source) VALUES (?, ?, ?)'),
      getRun: db.prepare<[string], RunRow>(`SELECT ${RUN_VIEW_COLUMNS} FROM runs WHERE id = ?`),
      /** The ids as one JSON array: one statement, whatever their number (no bound on parameters). */
      unfinishedRuns: db.prepare<[string], { id: string }>(
        `SELECT id FROM runs WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('queued', 'running', 'waiting')`,
      ),
      eventSeq: db.prepare<[string, string], { seq: number }>(
        'SELECT seq FROM events WHERE id = ? AND session_key = ?',
      ),
      listEvents: db.prepare<[string, number, number], EventRow>(
        `SELECT seq, id, ts, text, source, status, token_id FROM events WHERE session_key = ? AND seq > ? ORDER BY seq LIMIT ${BOUND_LIMIT}`,
      ),
    };
    // Built bottom-up, so each part gets the ones it writes through, already made.
    const routes = new SqliteRoutes(db);
    const signals = this.signals;
    this.admin = new SqliteAdmin(db, signals, options.path);
    const alerts = new SqliteAlerts(db);
    this.alerts = alerts;
    const callbacks = new SqliteCallbacks(db, alerts, signals);
    this.callbacks = callbacks;
    // The writes each part makes inside another's transaction (store/rules/tx-writer.ts).
    const writer = new SqliteTxWriter(db, routes, callbacks, alerts, (sessionKey) =>
      this.newestPending.delete(sessionKey),
    );
    this.writer = writer;
    this.outbox = new SqliteOutbox(db, writer, alerts, signals);
    const sessions = new SqliteSessions(db, writer, routes, signals);
    this.sessions = sessions;
    this.retention = new SqliteRetention(db, () => sessions.forgetCachedTranscripts());
    this.runs = new SqliteRunQueue(db, writer, signals);
    this.steps = new SqliteSteps(db, writer, (kind) => this.commits.emit(kind));
    const commitBatch = db.transaction((batch: readonly PendingAccept[]) =>
      batch.map((item) => this.acceptInTransaction(item)),
    );
    // IMMEDIATE takes the write lock up front, so a lock held by another
    // process is waited out (busy_timeout) instead of failing at once.
    this.accepts = new GroupCommit(
      (batch) => {
        const results = commitBatch.immediate(batch);
        signals.accepted(batch, results);
        return results;
      },
      {
        wrapError: (error) => new StoreUnavailableError(error),
        // The cache may hold an event of the rolled-back transaction.
        onFailure: () => this.newestPending.clear(),
      },
    );
  }

  private migrate(): void {
    const current = this.db.pragma('user_version', { simple: true }) as number;
    for (let version = current; version < MIGRATIONS.length; version++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[version] as string);
        this.db.pragma(`user_version = ${version + 1}`);
      })();
    }
  }

  private acceptInTransaction(item: PendingAccept): AcceptResult {
    const s = this.statements;
    const { idempotency } = item;
    if (idempotency) {
      const since = idempotency.now - idempotency.ttlMs;
      const earlier = s.findIdempotency.get(idempotency.scope, idempotency.key, since);
      if (earlier) return replayOrConflict(earlier, idempotency.bodyHash);
    }
    const plan = planAccept(item, this.pendingWakes);
    for (const event of plan.events) s.insertEvent.run(eventValues(event));
    for (const run of plan.runs) this.insertRun(run);
    const { answer } = plan.result;
    if (idempotency) {
      const { scope, key, bodyHash, now } = idempotency;
      s.saveIdempotency.run(scope, key, bodyHash, answer.status, answer.body, now);
    }
    return plan.result;
  }

  /** A run, its files, its key's head when the key has none, and its callback (if any). */
  private insertRun(run: NewRun): void {
    const s = this.statements;
    const inserted = s.insertRun.run(runValues(run, sqliteFlag));
    // The Buffer decoded at the ingress is bound as it is: no copy of the bytes on the way in.
    for (const [idx, file] of (run.attachments ?? []).entries()) {
      s.insertAttachment.run(run.id, idx, file.name, file.mediaType, file.bytes, file.data);
    }
    if (run.attachmentsFrom) s.copyAttachments.run(run.id, run.attachmentsFrom.runId);
    s.addRunHead.run(run.sessionKey, inserted.lastInsertRowid, run.source);
    if (run.callbackUrl)
      this.callbacks.insert(`msg_${uuidv7(run.createdAt)}`, run.id, run.callbackUrl, run.createdAt);
  }

  accept(
    actions: Action[],
    render: (committed: Committed[]) => StoredAnswer,
    idempotency?: IdempotencyClaim,
  ): Promise<AcceptResult> {
    return this.accepts.submit({ actions, render, idempotency });
  }

  async getRun(runId: string): Promise<RunView | undefined> {
    const row = this.statements.getRun.get(runId);
    if (!row) return undefined;
    return toRunView(row);
  }

  async unfinishedRuns(runIds: readonly string[]): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    const rows = this.statements.unfinishedRuns.all(JSON.stringify(runIds));
    return new Set(rows.map((row) => row.id));
  }

  async listEvents(sessionKey: string, options: ListEventsOptions): Promise<EventView[] | undefined> {
    let afterSeq = 0;
    if (options.after !== undefined) {
      const found = this.statements.eventSeq.get(options.after, sessionKey);
      if (!found) return undefined;
      afterSeq = found.seq;
    }
    return this.statements.listEvents.all(sessionKey, afterSeq, options.limit).map(toEventView);
  }

  async consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): Promise<number> {
    try {
      return this.db.transaction(() => this.writer.consumeEvents(sessionKey, eventIds, now)).immediate();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
  }

  async counts(): Promise<StoreCounts> {
    const counts = { runsQueued: 0, runsRunning: 0, deliveriesPending: 0 };
    for (const row of this.statements.activeRuns.all()) {
      if (row.status === 'queued') counts.runsQueued = row.n;
      else counts.runsRunning = row.n;
    }
    counts.deliveriesPending = this.statements.pendingDeliveries.get()?.n ?? 0;
    return counts;
  }

  async pruneIdempotency(olderThan: number): Promise<number> {
    // Finished callbacks are kept a week for inspection, like PostgreSQL's finished outbox rows.
    this.callbacks.prune(olderThan - FINISHED_ROW_EXTRA_MS);
    // Finished alert messages likewise (docs/alerts.md): no run's retention deletes them.
    this.alerts.prune(olderThan - FINISHED_ROW_EXTRA_MS);
    return this.statements.pruneIdempotency.run(olderThan).changes;
  }

  pruneBatch(kind: PruneKind, olderThan: number, limit: number): Promise<PruneBatch> {
    return this.retention.pruneBatch(kind, olderThan, limit);
  }

  async close(): Promise<void> {
    await this.accepts.drain();
    await this.runs.drain();
    // First, so the gateway's connection is the last one and its close checkpoints the rest.
    await this.checkpointer?.stop();
    if (this.db.open) this.db.close();
    // Only once the database is closed (and checkpointed) may the next gateway open it.
    this.writerLock.release();
  }
}
