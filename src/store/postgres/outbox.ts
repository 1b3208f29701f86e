/**
 * The delivery outbox on PostgreSQL. As on SQLite, items are enqueued in the
 * transaction that records the run's or heartbeat's result and progress is kept
 * part by part. Across replicas each item is leased: `deliveryHeads` hands a
 * pending item only to the replica that holds (or takes) its lease, so two
 * replicas never send the same part; a lease left by a replica that died
 * expires and another replica resumes after the last part recorded.
 */
import type pg from 'pg';
import type { CommitSignals } from '../commit-signals.js';
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
import { summarizeAlerts } from './alerts.js';
import { inTransaction, read, type Tx } from './db.js';
import { PgTxWriter } from './tx-writer.js';

export type { NewOutboxItem };

export interface PgOutboxOptions {
  owner: string;
  leaseMs: number;
  clock: () => number;
}

export class PgOutbox implements DeliveryOutboxStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgOutboxOptions,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
  ) {}

  async deliveryHeads(limit: number): Promise<OutboxItem[]> {
    const now = this.options.clock();
    const rows = await read<OutboxRow & { seq: number }>(
      this.pool,
      `WITH heads AS (
         SELECT d.seq FROM deliveries d
          WHERE d.status = 'pending' AND d.next_attempt_at >= 0
            AND (d.resolved_channel IS NULL OR NOT EXISTS (
                  SELECT 1 FROM deliveries o
                   WHERE o.status = 'pending' AND o.next_attempt_at >= 0 AND o.seq < d.seq
                     AND o.resolved_channel = d.resolved_channel AND o.resolved_to = d.resolved_to))
            AND (d.lease_owner IS NULL OR d.lease_owner = $1 OR d.lease_until < $2)
          ORDER BY d.seq LIMIT $4
          FOR UPDATE SKIP LOCKED)
       UPDATE deliveries SET lease_owner = $1, lease_until = GREATEST($3::bigint, deliveries.next_attempt_at + $5::bigint)
         FROM heads WHERE deliveries.seq = heads.seq
       RETURNING deliveries.*`,
      [this.options.owner, now, now + this.options.leaseMs, limit, this.options.leaseMs],
    );
    rows.sort((a, b) => a.seq - b.seq);
    return rows.map(toOutboxItem);
  }

  async resolveDelivery(id: string, route: DeliveryRoute, now: number): Promise<void> {
    await read(
      this.pool,
      'UPDATE deliveries SET resolved_channel = $1, resolved_to = $2, updated_at = $3, lease_until = $4 WHERE id = $5',
      [route.channel, route.to, now, now + this.options.leaseMs, id],
    );
  }

  async markPartsSent(id: string, partsSent: number, now: number): Promise<void> {
    await read(
      this.pool,
      'UPDATE deliveries SET parts_sent = $1, updated_at = $2, lease_until = $3 WHERE id = $4',
      [partsSent, now, now + this.options.leaseMs, id],
    );
  }

  async retryDelivery(item: OutboxItem, attempts: number, nextAttemptAt: number, error: string, now: number) {
    await inTransaction(this.pool, async (tx) => {
      // This replica keeps the lease until its retry is due, and a lease's length after.
      await tx.query(
        `UPDATE deliveries SET attempts = $1, next_attempt_at = $2, last_error = $3, updated_at = $4,
                               lease_until = GREATEST($4::bigint, $2::bigint) + $5::bigint
          WHERE id = $6`,
        [attempts, nextAttemptAt, error, now, this.options.leaseMs, item.id],
      );
      const record = retryRecord(item, attempts, error);
      if (record) await updateRecord(tx, item, record);
    });
  }

  async finishDelivery(
    item: OutboxItem,
    record: DeliveryRecord,
    now: number,
    alert?: NewAlert,
  ): Promise<AlertOutcome | undefined> {
    const alerted = await inTransaction(this.pool, async (tx) => {
      await tx.query(
        `UPDATE deliveries SET status = $1, last_error = $2, updated_at = $3, lease_owner = NULL, lease_until = NULL
          WHERE id = $4`,
        [record.status, record.reason, now, item.id],
      );
      const end = planDeliveryEnd(item, record, alert);
      if (end.record) await updateRecord(tx, item, end.record);
      const writer = new PgTxWriter(tx);
      if (end.route) await writer.writeRoute(item.mainSessionKey, end.route, now);
      if (end.settlesRun) await writer.armCallback(item.refId, now, item.traceParent);
      return end.alert ? writer.enqueueAlert(end.alert, now) : undefined;
    });
    this.signals.deliveryFinished(item, alerted);
    return alerted;
  }

  async summarizeAlerts(now: number, summary: AlertSummaryText): Promise<AlertCounts | undefined> {
    const counts = await summarizeAlerts(this.pool, now, summary);
    this.signals.alertsSummarized(counts);
    return counts;
  }
}

async function updateRecord(tx: Tx, item: OutboxItem, r: DeliveryRecord): Promise<void> {
  const table = item.kind === 'run' ? 'runs' : 'heartbeats';
  await tx.query(
    `UPDATE ${table} SET delivery_status = $1, delivery_channel = $2, delivery_to = $3, delivery_reason = $4 WHERE id = $5`,
    [r.status, r.channel, r.to, r.reason, item.refId],
  );
}
