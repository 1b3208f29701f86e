/**
 * The embedded default store: one SQLite file in WAL mode through better-sqlite3.
 *
 * Durability: `accept` resolves only after its transaction committed. With
 * `synchronous = NORMAL` (the default) the commit is in the WAL file, handed to
 * the OS, so it survives the gateway process being killed; `synchronous = FULL`
 * also fsyncs each commit, so it survives power loss.
 *
 * Group commit: accepts that arrive in the same event-loop turn are committed
 * together in one transaction (each in its own savepoint, so one failing accept
 * does not undo the others). Under load this turns hundreds of commits per
 * second into a few dozen, which is where the time went; an idle gateway still
 * commits each request on its own within the same turn.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import {
  type AcceptResult,
  type Action,
  type Committed,
  type EventView,
  type IdempotencyClaim,
  type ListEventsOptions,
  type RunView,
  type Store,
  type StoredAnswer,
  StoreUnavailableError,
} from '../types.js';
import { type Checkpointer, startCheckpointer } from './checkpointer.js';
import { MIGRATIONS } from './migrations.js';

export interface SqliteStoreOptions {
  path: string;
  synchronous?: 'normal' | 'full';
  /** How long a write waits for a lock held by another process before giving up (ms). */
  busyTimeoutMs?: number;
  /** Checkpoint the WAL from a worker thread this often (ms); 0 leaves it to SQLite on the writer. */
  checkpointIntervalMs?: number;
  /** Told when background checkpointing fails and the writer takes it over. */
  onWarning?: (message: string) => void;
}

interface PendingAccept {
  actions: Action[];
  render: (committed: Committed[]) => StoredAnswer;
  idempotency: IdempotencyClaim | undefined;
  resolve: (result: AcceptResult) => void;
  reject: (error: unknown) => void;
  result?: AcceptResult;
  error?: unknown;
}

interface RunRow {
  id: string;
  status: RunView['status'];
  agent_id: string;
  session_key: string;
  model: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  reply: string | null;
  error: string | null;
  delivery_status: RunView['delivery']['status'];
  delivery_channel: string | null;
  delivery_to: string | null;
  delivery_reason: string | null;
}

interface EventRow {
  seq: number;
  id: string;
  ts: number;
  text: string;
  source: string;
  status: EventView['status'];
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly statements;
  private readonly acceptOne;
  private readonly commitBatch;
  private pending: PendingAccept[] = [];
  private readonly checkpointer: Checkpointer | undefined;

  constructor(options: SqliteStoreOptions) {
    mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
    this.db = new Database(options.path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 2000}`);
    this.db.pragma('foreign_keys = ON');
    this.migrate();
    const checkpointIntervalMs = options.checkpointIntervalMs ?? 250;
    if (checkpointIntervalMs > 0) {
      this.db.pragma('wal_autocheckpoint = 0');
      this.checkpointer = startCheckpointer(options.path, checkpointIntervalMs, (message) => {
        options.onWarning?.(`${message}; checkpointing on the writer instead`);
        if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000');
      });
    }

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
      newestPendingEvent: db.prepare<[string], { id: string; text: string }>(
        `SELECT id, text FROM events WHERE session_key = ? AND status = 'pending' ORDER BY seq DESC LIMIT 1`,
      ),
      insertEvent: db.prepare(
        'INSERT INTO events (id, session_key, ts, text, source, wake_mode) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      insertRun: db.prepare(
        `INSERT INTO runs (id, agent_id, session_key, main_session_key, name, message, model, thinking,
           timeout_seconds, wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at,
           delivery_status, delivery_channel, delivery_to)
         VALUES (@id, @agentId, @sessionKey, @mainSessionKey, @name, @message, @model, @thinking,
           @timeoutSeconds, @wakeMode, @deliver, @channel, @to, @allowUnsafe, @source, @createdAt,
           @deliveryStatus, @deliveryChannel, @deliveryTo)`,
      ),
      getRun: db.prepare<[string], RunRow>(
        `SELECT id, status, agent_id, session_key, model, created_at, started_at, finished_at, reply, error,
                delivery_status, delivery_channel, delivery_to, delivery_reason
           FROM runs WHERE id = ?`,
      ),
      eventSeq: db.prepare<[string, string], { seq: number }>(
        'SELECT seq FROM events WHERE id = ? AND session_key = ?',
      ),
      listEvents: db.prepare<[string, number, number], EventRow>(
        'SELECT seq, id, ts, text, source, status FROM events WHERE session_key = ? AND seq > ? ORDER BY seq LIMIT ?',
      ),
    };
    // Called inside `commitBatch`, better-sqlite3 runs this as a savepoint.
    this.acceptOne = db.transaction(this.acceptInTransaction.bind(this));
    this.commitBatch = db.transaction((batch: PendingAccept[]) => {
      for (const item of batch) {
        try {
          item.result = this.acceptOne(item.actions, item.render, item.idempotency);
        } catch (error) {
          item.error = error;
        }
      }
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
        const newest = s.newestPendingEvent.get(event.sessionKey);
        if (newest && newest.text === event.text) {
          return { kind: 'wake', eventId: newest.id, outcome: 'coalesced' };
        }
        s.insertEvent.run(event.id, event.sessionKey, event.ts, event.text, event.source, event.wakeMode);
        return { kind: 'wake', eventId: event.id, outcome: 'queued' };
      }
      const { run } = action;
      s.insertRun.run({
        ...run,
        deliver: run.deliver ? 1 : 0,
        allowUnsafe: run.allowUnsafeExternalContent ? 1 : 0,
        deliveryStatus: run.deliver ? 'pending' : 'none',
        deliveryChannel: run.deliver ? run.channel : null,
        deliveryTo: run.deliver ? run.to : null,
        to: run.to,
      });
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
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) setImmediate(this.flush);
      this.pending.push({ actions, render, idempotency, resolve, reject });
    });
  }

  private readonly flush = () => {
    const batch = this.pending;
    this.pending = [];
    try {
      // BEGIN IMMEDIATE: take the write lock first, so a lock held elsewhere is waited
      // out (busy_timeout). A deferred transaction that reads first fails at once with
      // SQLITE_BUSY when it then tries to write: SQLite skips the busy handler there.
      this.commitBatch.immediate(batch);
    } catch (error) {
      // The commit itself failed: nothing of the batch was written.
      for (const item of batch) item.reject(new StoreUnavailableError(error));
      return;
    }
    for (const item of batch) {
      if (item.error !== undefined) item.reject(new StoreUnavailableError(item.error));
      else item.resolve(item.result as AcceptResult);
    }
  };

  async getRun(runId: string): Promise<RunView | undefined> {
    const row = this.statements.getRun.get(runId);
    if (!row) return undefined;
    return {
      runId: row.id,
      status: row.status,
      agentId: row.agent_id,
      sessionKey: row.session_key,
      model: row.model,
      createdAt: iso(row.created_at) as string,
      startedAt: iso(row.started_at),
      finishedAt: iso(row.finished_at),
      reply: row.reply,
      error: row.error,
      delivery: {
        status: row.delivery_status,
        channel: row.delivery_channel,
        to: row.delivery_to,
        reason: row.delivery_reason,
      },
    };
  }

  async listEvents(sessionKey: string, options: ListEventsOptions): Promise<EventView[] | undefined> {
    let afterSeq = 0;
    if (options.after !== undefined) {
      const found = this.statements.eventSeq.get(options.after, sessionKey);
      if (!found) return undefined;
      afterSeq = found.seq;
    }
    return this.statements.listEvents.all(sessionKey, afterSeq, options.limit).map((row) => ({
      id: row.id,
      ts: iso(row.ts) as string,
      text: row.text,
      source: row.source,
      status: row.status,
    }));
  }

  async pruneIdempotency(olderThan: number): Promise<number> {
    return this.statements.pruneIdempotency.run(olderThan).changes;
  }

  async close(): Promise<void> {
    if (this.pending.length > 0) this.flush();
    await this.checkpointer?.stop();
    if (this.db.open) this.db.close();
  }
}
