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
import {
  attachmentsColumn,
  type EventRow,
  FINISHED_ROW_EXTRA_MS,
  RUN_VIEW_COLUMNS,
  type RunRow,
  toEventView,
  toRunView,
} from '../rows.js';
import { GroupCommit } from '../rules/group-commit.js';
import {
  type AcceptResult,
  type Action,
  type Committed,
  type EventView,
  type IdempotencyClaim,
  type ListEventsOptions,
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
import { type NewOutboxItem, SqliteOutbox } from './outbox.js';
import { createPrivateFile, makePrivateDir } from './private-files.js';
import { SqliteRetention } from './retention.js';
import { SqliteRoutes } from './routes.js';
import { SqliteRunQueue } from './run-queue.js';
import { SqliteSessions } from './sessions.js';
import { WalCheckpointer } from './wal-checkpointer.js';
import { WriterLock } from './writer-lock.js';

export interface SqliteStoreOptions {
  path: string;
  /** Default "full": see the header comment. */
  synchronous?: 'normal' | 'full';
  /** How long a write waits for a lock held by another process before giving up (ms). */
  busyTimeoutMs?: number;
}

interface PendingAccept {
  actions: Action[];
  render: (committed: Committed[]) => StoredAnswer;
  idempotency: IdempotencyClaim | undefined;
}

/** WAL size (pages, 8 MiB) at which the checkpointer thread gets the WAL started over; see the header comment. */
const RESTART_PAGES = 2048;
/** A WAL file that grew past this while waiting to start over is cut back to it when it does. */
const WAL_FILE_LIMIT_BYTES = 32 * 1024 * 1024;
/** WAL size (pages, ~80 MiB) at which the gateway's own commit checkpoints: only if the thread cannot. */
const SAFETY_NET_PAGES = 20_000;

export class SqliteStore implements Store {
  private readonly writerLock: WriterLock;
  private readonly db: Database.Database;
  private readonly checkpointer: WalCheckpointer;
  private readonly statements;
  /** Accepts arriving in the same event-loop turn commit together. */
  private readonly accepts: GroupCommit<PendingAccept, AcceptResult>;
  /**
   * Newest pending event per main session, for wake coalescing without a read
   * per wake. Valid because this store is the database's only writer (it holds
   * the writer lock); it is dropped whenever a transaction fails, so it never
   * holds an uncommitted event.
   */
  private readonly newestPending = new Map<string, { id: string; text: string } | undefined>();
  readonly sessions: SqliteSessions;
  readonly runs: SqliteRunQueue;
  readonly outbox: SqliteOutbox;
  readonly callbacks: SqliteCallbacks;
  readonly admin: SqliteAdmin;
  private readonly retention: SqliteRetention;
  private readonly alerts: SqliteAlerts;

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
    this.checkpointer = new WalCheckpointer({ path: options.path, synchronous, restartPages: RESTART_PAGES });
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
      insertEvent: db.prepare(
        'INSERT INTO events (id, session_key, ts, text, source, wake_mode, token_id, trace_parent) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      insertRun: db.prepare(
        `INSERT INTO runs (id, agent_id, session_key, main_session_key, name, message, model, thinking,
           timeout_seconds, wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at,
           delivery_status, delivery_channel, delivery_to, retry_of, token_id, trace_parent, attachments, stream)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
        `SELECT id FROM runs WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('queued', 'running')`,
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
    this.admin = new SqliteAdmin(db, options.path);
    const alerts = new SqliteAlerts(db);
    this.alerts = alerts;
    const callbacks = new SqliteCallbacks(db, alerts);
    this.callbacks = callbacks;
    const settleRun = (runId: string, now: number, traceParent: string | null) =>
      callbacks.arm(runId, now, traceParent);
    const outbox = new SqliteOutbox(
      db,
      (sessionKey, route, now) => routes.write(sessionKey, route, now),
      settleRun,
      alerts,
    );
    const enqueueDelivery = (item: NewOutboxItem, now: number) => outbox.enqueue(item, now);
    const sessions = new SqliteSessions(
      db,
      (sessionKey) => this.newestPending.delete(sessionKey),
      enqueueDelivery,
      routes,
    );
    this.outbox = outbox;
    this.sessions = sessions;
    this.retention = new SqliteRetention(db, () => sessions.forgetCachedTranscripts());
    this.runs = new SqliteRunQueue(
      db,
      (sessionKey, entry, runId, ts) => sessions.appendTranscript(sessionKey, entry, runId, ts),
      (event) => sessions.insertEvent(event),
      enqueueDelivery,
      settleRun,
      (alert, now) => alerts.enqueue(alert, now),
    );
    const commitBatch = db.transaction((batch: readonly PendingAccept[]) =>
      batch.map((item) => this.acceptInTransaction(item.actions, item.render, item.idempotency)),
    );
    // IMMEDIATE takes the write lock up front, so a lock held by another
    // process is waited out (busy_timeout) instead of failing at once.
    this.accepts = new GroupCommit((batch) => commitBatch.immediate(batch), {
      wrapError: (error) => new StoreUnavailableError(error),
      // The cache may hold an event of the rolled-back transaction.
      onFailure: () => this.newestPending.clear(),
    });
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

  private acceptInTransaction(
    actions: Action[],
    render: (committed: Committed[]) => StoredAnswer,
    idempotency: IdempotencyClaim | undefined,
  ): AcceptResult {
    const s = this.statements;
    if (idempotency) {
      const earlier = s.findIdempotency.get(
        idempotency.scope,
        idempotency.key,
        idempotency.now - idempotency.ttlMs,
      );
      if (earlier) {
        return earlier.body_hash === idempotency.bodyHash
          ? { kind: 'replay', answer: { status: earlier.status, body: earlier.body } }
          : { kind: 'conflict' };
      }
    }
    const committed: Committed[] = actions.map((action) => {
      if (action.kind === 'wake') {
        const { event } = action;
        const newest = this.newestPending.has(event.sessionKey)
          ? this.newestPending.get(event.sessionKey)
          : s.newestPendingEvent.get(event.sessionKey);
        if (newest && newest.text === event.text) {
          return { kind: 'wake', eventId: newest.id, outcome: 'coalesced' };
        }
        s.insertEvent.run(
          event.id,
          event.sessionKey,
          event.ts,
          event.text,
          event.source,
          event.wakeMode,
          event.tokenId ?? null,
          event.traceParent ?? null,
        );
        this.newestPending.set(event.sessionKey, { id: event.id, text: event.text });
        return { kind: 'wake', eventId: event.id, outcome: 'queued' };
      }
      const { run } = action;
      const inserted = s.insertRun.run(
        run.id,
        run.agentId,
        run.sessionKey,
        run.mainSessionKey,
        run.name,
        run.message,
        run.model,
        run.thinking,
        run.timeoutSeconds,
        run.wakeMode,
        run.deliver ? 1 : 0,
        run.channel,
        run.to,
        run.allowUnsafeExternalContent ? 1 : 0,
        run.source,
        run.createdAt,
        run.deliver ? 'pending' : 'none',
        run.deliver ? run.channel : null,
        run.deliver ? run.to : null,
        run.retryOf ?? null,
        run.tokenId ?? null,
        run.traceParent ?? null,
        attachmentsColumn(run),
        run.stream ? 1 : 0,
      );
      // The Buffer decoded at the ingress is bound as it is: no copy of the bytes on the way in.
      for (const [idx, file] of (run.attachments ?? []).entries()) {
        s.insertAttachment.run(run.id, idx, file.name, file.mediaType, file.bytes, file.data);
      }
      if (run.attachmentsFrom) s.copyAttachments.run(run.id, run.attachmentsFrom.runId);
      s.addRunHead.run(run.sessionKey, inserted.lastInsertRowid, run.source);
      if (run.callbackUrl)
        this.callbacks.insert(`msg_${uuidv7(run.createdAt)}`, run.id, run.callbackUrl, run.createdAt);
      return { kind: 'agent', runId: run.id };
    });
    const answer = render(committed);
    if (idempotency) {
      s.saveIdempotency.run(
        idempotency.scope,
        idempotency.key,
        idempotency.bodyHash,
        answer.status,
        answer.body,
        idempotency.now,
      );
    }
    return { kind: 'committed', committed, answer };
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
      return this.db.transaction(() => this.sessions.consumeEvents(sessionKey, eventIds, now)).immediate();
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
    await this.checkpointer.stop();
    if (this.db.open) this.db.close();
    // Only once the database is closed (and checkpointed) may the next gateway open it.
    this.writerLock.release();
  }
}
