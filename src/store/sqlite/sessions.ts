/**
 * Sessions on SQLite: transcripts, pending system events, heartbeats and the
 * last delivery route of each main session.
 */
import type Database from 'better-sqlite3';
import { type HeartbeatRow, type PendingEventRow, toHeartbeatView, toPendingEvent } from '../rows.js';
import { HEARTBEAT_COLUMNS, heartbeatValues, planHeartbeat } from '../rules/heartbeat.js';
import type {
  DeliveryRoute,
  HeartbeatRecord,
  HeartbeatView,
  NewEvent,
  PendingEvent,
  SessionStore,
  TranscriptEntry,
} from '../types.js';
import { BOUND_LIMIT } from './bound-limit.js';
import type { NewOutboxItem } from './outbox.js';
import type { SqliteRoutes } from './routes.js';
import { TranscriptCache, type TranscriptRow } from './transcript-cache.js';

export class SqliteSessions implements SessionStore {
  private readonly s;
  private readonly transcripts: TranscriptCache;

  constructor(
    private readonly db: Database.Database,
    /** Told whenever pending events of a session change outside the ingress. */
    private readonly invalidate: (sessionKey: string) => void,
    /** Puts a reply in the delivery outbox, inside the caller's transaction. */
    private readonly enqueueDelivery: (item: NewOutboxItem, now: number) => void,
    private readonly routes: SqliteRoutes,
  ) {
    this.s = {
      appendTranscript: db.prepare(
        'INSERT INTO transcripts (session_key, role, content, run_id, ts) VALUES (?, ?, ?, ?, ?)',
      ),
      // Newest first straight off the index; reversed in JS (no sort step in SQLite).
      newestTurns: db.prepare<[string, number, number], TranscriptRow>(
        `SELECT seq, role, content FROM transcripts WHERE session_key = ? AND seq > ? ORDER BY seq DESC LIMIT ${BOUND_LIMIT}`,
      ),
      insertEvent: db.prepare(
        'INSERT INTO events (id, session_key, ts, text, source, wake_mode) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      pending: db.prepare<[string, number], PendingEventRow>(
        `SELECT id, ts, text, source, wake_mode, trace_parent FROM events
          WHERE session_key = ? AND status = 'pending' ORDER BY seq LIMIT ${BOUND_LIMIT}`,
      ),
      awaiting: db.prepare<[], { session_key: string }>(
        `SELECT DISTINCT session_key FROM events WHERE status = 'pending' AND wake_mode = 'now'`,
      ),
      consume: db.prepare(
        `UPDATE events SET status = 'consumed', consumed_at = ? WHERE id = ? AND session_key = ? AND status = 'pending'`,
      ),
      insertHeartbeat: db.prepare(
        `INSERT INTO heartbeats (${HEARTBEAT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      heartbeats: db.prepare<[string, number], HeartbeatRow>(
        `SELECT * FROM (SELECT * FROM heartbeats WHERE session_key = ? ORDER BY seq DESC LIMIT ${BOUND_LIMIT}) ORDER BY seq`,
      ),
    };
    this.transcripts = new TranscriptCache((sessionKey, afterSeq, limit) =>
      this.s.newestTurns.all(sessionKey, afterSeq, limit),
    );
  }

  /** For use inside a caller's transaction. */
  appendTranscript(sessionKey: string, entry: TranscriptEntry, runId: string | null, ts: number): void {
    this.s.appendTranscript.run(sessionKey, entry.role, entry.content, runId, ts);
  }

  /** For use inside a caller's transaction. */
  insertEvent(event: NewEvent): void {
    this.s.insertEvent.run(event.id, event.sessionKey, event.ts, event.text, event.source, event.wakeMode);
    this.invalidate(event.sessionKey);
  }

  /** For use inside a caller's transaction; returns how many events changed. */
  consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): number {
    this.invalidate(sessionKey);
    return eventIds.reduce((changed, id) => changed + this.s.consume.run(now, id, sessionKey).changes, 0);
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
        const writes = planHeartbeat(r);
        if (!writes) return;
        this.consumeEvents(r.sessionKey, writes.consumed, r.finishedAt);
        for (const entry of writes.transcript) this.appendTranscript(r.sessionKey, entry, null, r.finishedAt);
        if (writes.delivery) this.enqueueDelivery(writes.delivery, r.finishedAt);
      })
      .immediate();
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
