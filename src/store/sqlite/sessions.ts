/**
 * Sessions on SQLite: transcripts, pending system events, heartbeats and the
 * last delivery route of each main session.
 */
import type Database from 'better-sqlite3';
import type { CommitSignals } from '../commit-signals.js';
import { type HeartbeatRow, type PendingEventRow, toHeartbeatView, toPendingEvent } from '../rows.js';
import {
  HEARTBEAT_COLUMNS,
  HEARTBEAT_WIDTH,
  heartbeatSpend,
  heartbeatValues,
  planHeartbeat,
} from '../rules/heartbeat.js';
import type {
  DeliveryRoute,
  HeartbeatRecord,
  HeartbeatView,
  PendingEvent,
  SessionStore,
  TranscriptEntry,
} from '../types.js';
import { BOUND_LIMIT } from './bound-limit.js';
import type { SqliteRoutes } from './routes.js';
import { TranscriptCache, type TranscriptRow } from './transcript-cache.js';
import type { SqliteTxWriter } from './tx-writer.js';

export class SqliteSessions implements SessionStore {
  private readonly s;
  private readonly transcripts: TranscriptCache;

  constructor(
    private readonly db: Database.Database,
    /** Writes inside this part's transactions that other parts own (store/rules/tx-writer.ts). */
    private readonly writer: SqliteTxWriter,
    private readonly routes: SqliteRoutes,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
  ) {
    this.s = {
      // Newest first straight off the index; reversed in JS (no sort step in SQLite).
      newestTurns: db.prepare<[string, number, number], TranscriptRow>(
        `SELECT seq, role, content FROM transcripts WHERE session_key = ? AND seq > ? ORDER BY seq DESC LIMIT ${BOUND_LIMIT}`,
      ),
      pending: db.prepare<[string, number], PendingEventRow>(
        `SELECT id, ts, text, source, wake_mode, trace_parent FROM events
          WHERE session_key = ? AND status = 'pending' ORDER BY seq LIMIT ${BOUND_LIMIT}`,
      ),
      awaiting: db.prepare<[], { session_key: string }>(
        `SELECT DISTINCT session_key FROM events WHERE status = 'pending' AND wake_mode = 'now'`,
      ),
      insertHeartbeat: db.prepare(
        `INSERT INTO heartbeats (${HEARTBEAT_COLUMNS}) VALUES (${Array(HEARTBEAT_WIDTH).fill('?').join(', ')})`,
      ),
      heartbeats: db.prepare<[string, number], HeartbeatRow>(
        `SELECT * FROM (SELECT * FROM heartbeats WHERE session_key = ? ORDER BY seq DESC LIMIT ${BOUND_LIMIT}) ORDER BY seq`,
      ),
    };
    this.transcripts = new TranscriptCache((sessionKey, afterSeq, limit) =>
      this.s.newestTurns.all(sessionKey, afterSeq, limit),
    );
  }

  async loadTranscript(sessionKey: string, limit: number): Promise<TranscriptEntry[]> {
    return this.transcripts.load(sessionKey, limit);
  }

  /** Retention deleted transcript rows: what is cached may hold some of them. */
  forgetCachedTranscripts(): void {
    this.transcripts.clear();
  }

  async pendingEvents(sessionKey: string, limit: number): Promise<PendingEvent[]> {
    return this.s.pending.all(sessionKey, limit).map(toPendingEvent);
  }

  async sessionsAwaitingHeartbeat(): Promise<string[]> {
    return this.s.awaiting.all().map((row) => row.session_key);
  }

  async recordHeartbeat(r: HeartbeatRecord): Promise<void> {
    this.db
      .transaction(() => {
        this.s.insertHeartbeat.run(heartbeatValues(r));
        this.writer.addSpend(heartbeatSpend(r));
        const writes = planHeartbeat(r);
        if (!writes) return;
        this.writer.consumeEvents(r.sessionKey, writes.consumed, r.finishedAt);
        this.writer.appendTranscript(writes.transcript);
        if (writes.delivery) this.writer.enqueueDelivery(writes.delivery, r.finishedAt);
      })
      .immediate();
    this.signals.heartbeatRecorded(r);
  }

  async listHeartbeats(sessionKey: string, limit: number): Promise<HeartbeatView[]> {
    return this.s.heartbeats.all(sessionKey, limit).map(toHeartbeatView);
  }

  /** One process owns a SQLite file, and its scheduler already runs one heartbeat per session. */
  async acquireHeartbeatLease(): Promise<boolean> {
    return true;
  }

  async releaseHeartbeatLease(): Promise<void> {}

  async getRoute(mainSessionKey: string): Promise<DeliveryRoute | undefined> {
    return this.routes.read(mainSessionKey);
  }

  async setRoute(mainSessionKey: string, route: DeliveryRoute, now: number): Promise<void> {
    this.routes.write(mainSessionKey, route, now);
  }
}
