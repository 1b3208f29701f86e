/**
 * The writes one part makes inside another's transaction, on SQLite (store/rules/tx-writer.ts):
 * prepared statements run synchronously inside the caller's better-sqlite3 transaction.
 */
import type Database from 'better-sqlite3';
import { type NewOutboxItem, OUTBOX_COLUMNS, outboxValues } from '../rows.js';
import { SPEND_ADD, SPEND_COLUMNS, type SpendRow, spendValues } from '../rules/budgets.js';
import type { TranscriptRow } from '../rules/completion.js';
import type { TxWriter } from '../rules/tx-writer.js';
import type { AlertOutcome, DeliveryRoute, NewAlert, NewEvent } from '../types.js';
import type { SqliteAlerts } from './alerts.js';
import type { SqliteCallbacks } from './callbacks.js';
import type { SqliteRoutes } from './routes.js';

export class SqliteTxWriter implements TxWriter<'sync'> {
  private readonly s;

  constructor(
    db: Database.Database,
    private readonly routes: Pick<SqliteRoutes, 'write'>,
    private readonly callbacks: Pick<SqliteCallbacks, 'arm'>,
    private readonly alerts: Pick<SqliteAlerts, 'enqueue'>,
    /** Told whenever pending events of a session change outside the ingress. */
    private readonly invalidate: (sessionKey: string) => void = () => {},
  ) {
    this.s = {
      appendTranscript: db.prepare(
        'INSERT INTO transcripts (session_key, role, content, run_id, ts) VALUES (?, ?, ?, ?, ?)',
      ),
      insertEvent: db.prepare(
        'INSERT INTO events (id, session_key, ts, text, source, wake_mode) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      consume: db.prepare(
        `UPDATE events SET status = 'consumed', consumed_at = ? WHERE id = ? AND session_key = ? AND status = 'pending'`,
      ),
      enqueueDelivery: db.prepare(
        `INSERT INTO deliveries (${OUTBOX_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      addSpend: db.prepare(
        `INSERT INTO budget_spend (${SPEND_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ${SPEND_ADD}`,
      ),
    };
  }

  appendTranscript(rows: readonly TranscriptRow[]): void {
    for (const row of rows)
      this.s.appendTranscript.run(row.sessionKey, row.role, row.content, row.runId, row.ts);
  }

  insertEvents(events: readonly NewEvent[]): void {
    for (const e of events) {
      this.s.insertEvent.run(e.id, e.sessionKey, e.ts, e.text, e.source, e.wakeMode);
      this.invalidate(e.sessionKey);
    }
  }

  consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): number {
    this.invalidate(sessionKey);
    return eventIds.reduce((changed, id) => changed + this.s.consume.run(now, id, sessionKey).changes, 0);
  }

  enqueueDelivery(item: NewOutboxItem, now: number): void {
    this.s.enqueueDelivery.run(outboxValues(item, now));
  }

  writeRoute(mainSessionKey: string, route: DeliveryRoute, now: number): void {
    this.routes.write(mainSessionKey, route, now);
  }

  armCallback(runId: string, now: number, traceParent: string | null): void {
    this.callbacks.arm(runId, now, traceParent);
  }

  enqueueAlert(alert: NewAlert, now: number): AlertOutcome {
    return this.alerts.enqueue(alert, now);
  }

  addSpend(rows: readonly SpendRow[]): void {
    for (const row of rows) this.s.addSpend.run(spendValues(row));
  }
}
