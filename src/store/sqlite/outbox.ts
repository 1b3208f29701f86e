/**
 * The delivery outbox on SQLite. Items are enqueued in the same transaction
 * that records a run's or heartbeat's result, so a reply is never lost between
 * "finished" and "sent"; progress is recorded part by part, so a restart
 * resumes after the last part that was sent instead of sending it again.
 */
import type Database from 'better-sqlite3';
import { type CommitSignals, NO_SIGNALS } from '../commit-signals.js';
import { type NewOutboxItem, type OutboxRow, toOutboxItem } from '../rows.js';
import { planDeliveryEnd, retryRecord } from '../rules/delivery-end.js';
import type {
  AlertCounts,
  AlertOutcome,
  AlertSummaryText,
  DeliveryOutboxStore,
  DeliveryRecord,
  DeliveryRoute,
  NewAlert,
  OutboxItem,
} from '../types.js';
import type { SqliteAlerts } from './alerts.js';
import { BOUND_LIMIT } from './bound-limit.js';
import type { SqliteTxWriter } from './tx-writer.js';

export type { NewOutboxItem };

export class SqliteOutbox implements DeliveryOutboxStore {
  private readonly s;

  constructor(
    private readonly db: Database.Database,
    /** Writes inside this part's transactions that other parts own (store/rules/tx-writer.ts). */
    private readonly writer: SqliteTxWriter,
    /** Makes the hour's alert summary (docs/alerts.md). */
    private readonly alerts: SqliteAlerts,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts); absent: the outbox on its own. */
    private readonly signals: CommitSignals = NO_SIGNALS,
  ) {
    this.s = {
      // Pending rows only, through the partial index deliveries_due: the head of each
      // fixed route (its lowest seq) and every row whose route is not fixed yet.
      heads: db.prepare<[number], OutboxRow>(
        `SELECT d.* FROM deliveries d INDEXED BY deliveries_due
          WHERE d.status = 'pending' AND d.next_attempt_at >= 0
            AND (d.resolved_channel IS NULL OR d.seq IN (
              SELECT MIN(seq) FROM deliveries
               WHERE status = 'pending' AND next_attempt_at >= 0 AND resolved_channel IS NOT NULL
               GROUP BY resolved_channel, resolved_to))
          ORDER BY d.seq LIMIT ${BOUND_LIMIT}`,
      ),
      resolve: db.prepare(
        'UPDATE deliveries SET resolved_channel = ?, resolved_to = ?, updated_at = ? WHERE id = ?',
      ),
      parts: db.prepare('UPDATE deliveries SET parts_sent = ?, updated_at = ? WHERE id = ?'),
      retry: db.prepare(
        'UPDATE deliveries SET attempts = ?, next_attempt_at = ?, last_error = ?, updated_at = ? WHERE id = ?',
      ),
      finish: db.prepare('UPDATE deliveries SET status = ?, last_error = ?, updated_at = ? WHERE id = ?'),
      runDelivery: db.prepare(
        'UPDATE runs SET delivery_status = ?, delivery_channel = ?, delivery_to = ?, delivery_reason = ? WHERE id = ?',
      ),
      heartbeatDelivery: db.prepare(
        'UPDATE heartbeats SET delivery_status = ?, delivery_channel = ?, delivery_to = ?, delivery_reason = ? WHERE id = ?',
      ),
    };
  }

  async deliveryHeads(limit: number): Promise<OutboxItem[]> {
    return this.s.heads.all(limit).map(toOutboxItem);
  }

  async resolveDelivery(id: string, route: DeliveryRoute, now: number): Promise<void> {
    this.s.resolve.run(route.channel, route.to, now, id);
  }

  async markPartsSent(id: string, partsSent: number, now: number): Promise<void> {
    this.s.parts.run(partsSent, now, id);
  }

  async retryDelivery(item: OutboxItem, attempts: number, nextAttemptAt: number, error: string, now: number) {
    this.db
      .transaction(() => {
        this.s.retry.run(attempts, nextAttemptAt, error, now, item.id);
        const record = retryRecord(item, attempts, error);
        if (record) this.updateRecord(item, record);
      })
      .immediate();
  }

  async finishDelivery(
    item: OutboxItem,
    record: DeliveryRecord,
    now: number,
    alert?: NewAlert,
  ): Promise<AlertOutcome | undefined> {
    const alerted = this.db
      .transaction(() => {
        this.s.finish.run(record.status, record.reason, now, item.id);
        const end = planDeliveryEnd(item, record, alert);
        if (end.record) this.updateRecord(item, end.record);
        if (end.route) this.writer.writeRoute(item.mainSessionKey, end.route, now);
        if (end.settlesRun) this.writer.armCallback(item.refId, now, item.traceParent);
        return end.alert ? this.writer.enqueueAlert(end.alert, now) : undefined;
      })
      .immediate();
    this.signals.deliveryFinished(item, alerted);
    return alerted;
  }

  async summarizeAlerts(now: number, summary: AlertSummaryText): Promise<AlertCounts | undefined> {
    const counts = this.alerts.summarize(now, summary);
    this.signals.alertsSummarized(counts);
    return counts;
  }

  private updateRecord(item: OutboxItem, r: DeliveryRecord): void {
    const statement = item.kind === 'run' ? this.s.runDelivery : this.s.heartbeatDelivery;
    statement.run(r.status, r.channel, r.to, r.reason, item.refId);
  }
}
