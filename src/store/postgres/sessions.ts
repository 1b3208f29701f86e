/**
 * Sessions on PostgreSQL: transcripts, pending system events, heartbeats and the
 * last delivery route of each main session; what a heartbeat writes that other parts own goes
 * through the transaction's writer (tx-writer.ts).
 */
import type pg from 'pg';
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
import { inTransaction, read, readPrepared } from './db.js';
import { PgTxWriter } from './tx-writer.js';

const INSERT_HEARTBEAT = `INSERT INTO heartbeats (${HEARTBEAT_COLUMNS})
  VALUES (${Array.from({ length: HEARTBEAT_WIDTH }, (_, i) => `$${i + 1}`).join(', ')})`;

export class PgSessions implements SessionStore {
  constructor(
    private readonly pool: pg.Pool,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
  ) {}

  async loadTranscript(sessionKey: string, limit: number): Promise<TranscriptEntry[]> {
    return readPrepared<TranscriptEntry>(
      this.pool,
      `SELECT role, content FROM (
         SELECT seq, role, content FROM transcripts WHERE session_key = $1 ORDER BY seq DESC LIMIT $2
       ) t ORDER BY seq`,
      [sessionKey, limit],
    );
  }

  async pendingEvents(sessionKey: string, limit: number): Promise<PendingEvent[]> {
    const rows = await readPrepared<PendingEventRow>(
      this.pool,
      `SELECT id, ts, text, source, wake_mode, trace_parent FROM events
        WHERE session_key = $1 AND status = 'pending' ORDER BY seq LIMIT $2`,
      [sessionKey, limit],
    );
    return rows.map(toPendingEvent);
  }

  async sessionsAwaitingHeartbeat(): Promise<string[]> {
    const rows = await read<{ session_key: string }>(
      this.pool,
      `SELECT DISTINCT session_key FROM events WHERE status = 'pending' AND wake_mode = 'now'`,
      [],
    );
    return rows.map((row) => row.session_key);
  }

  async recordHeartbeat(r: HeartbeatRecord): Promise<void> {
    await inTransaction(this.pool, async (tx) => {
      await tx.query(INSERT_HEARTBEAT, heartbeatValues(r));
      const writer = new PgTxWriter(tx);
      await writer.addSpend(heartbeatSpend(r));
      const writes = planHeartbeat(r);
      if (!writes) return;
      await writer.consumeEvents(r.sessionKey, writes.consumed, r.finishedAt);
      await writer.appendTranscript(writes.transcript);
      if (writes.delivery) await writer.enqueueDelivery(writes.delivery, r.finishedAt);
    });
    this.signals.heartbeatRecorded(r);
  }

  async listHeartbeats(sessionKey: string, limit: number): Promise<HeartbeatView[]> {
    const rows = await read<HeartbeatRow>(
      this.pool,
      `SELECT * FROM (SELECT * FROM heartbeats WHERE session_key = $1 ORDER BY seq DESC LIMIT $2) h ORDER BY seq`,
      [sessionKey, limit],
    );
    return rows.map(toHeartbeatView);
  }

  async acquireHeartbeatLease(
    sessionKey: string,
    owner: string,
    now: number,
    until: number,
  ): Promise<boolean> {
    const taken = await inTransaction(this.pool, (tx) =>
      tx.query(
        `INSERT INTO heartbeat_leases (session_key, owner, lease_until) VALUES ($1, $2, $3)
           ON CONFLICT (session_key) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until
           WHERE heartbeat_leases.owner = excluded.owner OR heartbeat_leases.lease_until < $4`,
        [sessionKey, owner, until, now],
      ),
    );
    return taken.rowCount === 1;
  }

  async releaseHeartbeatLease(sessionKey: string, owner: string): Promise<void> {
    await inTransaction(this.pool, (tx) =>
      tx.query('DELETE FROM heartbeat_leases WHERE session_key = $1 AND owner = $2', [sessionKey, owner]),
    );
  }

  async getRoute(mainSessionKey: string): Promise<DeliveryRoute | undefined> {
    const rows = await read<{ channel: string; recipient: string }>(
      this.pool,
      'SELECT channel, recipient FROM routes WHERE session_key = $1',
      [mainSessionKey],
    );
    const row = rows[0];
    return row ? { channel: row.channel, to: row.recipient } : undefined;
  }

  async setRoute(mainSessionKey: string, route: DeliveryRoute, now: number): Promise<void> {
    await inTransaction(this.pool, (tx) => new PgTxWriter(tx).writeRoute(mainSessionKey, route, now));
  }
}
