/**
 * What a delivery's end writes besides its own outbox row, the same on every driver
 * (docs/architecture.md, "The store's rules, written once"): the driver updates the row,
 * asks this what follows, and writes it in the same transaction.
 *
 * - a reply's run or heartbeat keeps the delivery's record (an alert message has none);
 * - a delivery that got through makes its route the main session's last one;
 * - a run's delivery settled: its result is final, and its completion callback becomes due;
 * - a failed delivery raises its alert (an alert message's own failure raises none).
 */
import type { DeliveryRecord, DeliveryRoute, NewAlert, OutboxItem } from '../types.js';

export interface DeliveryEnd {
  /** The record of the run or heartbeat the reply answers (`item.kind`, `item.refId`); null for none. */
  record: DeliveryRecord | null;
  /** The route to keep as `item.mainSessionKey`'s last one; null to keep the one it has. */
  route: DeliveryRoute | null;
  /** The run `item.refId`'s delivery settled: its callback becomes due (continuing `item.traceParent`). */
  settlesRun: boolean;
  /** The alert to enqueue; null for none. */
  alert: NewAlert | null;
}

const ALERT_MESSAGE_END: DeliveryEnd = { record: null, route: null, settlesRun: false, alert: null };

/** A delivery that ended (delivered, failed or skipped) with `record`. */
export function planDeliveryEnd(item: OutboxItem, record: DeliveryRecord, alert?: NewAlert): DeliveryEnd {
  if (item.kind === 'alert') return ALERT_MESSAGE_END;
  return {
    record,
    route:
      record.status === 'delivered' && record.channel && record.to
        ? { channel: record.channel, to: record.to }
        : null,
    settlesRun: item.kind === 'run',
    alert: alert && record.status === 'failed' ? alert : null,
  };
}

/**
 * The record a failed attempt leaves on the reply's run or heartbeat while it is retried:
 * pending, on the route it was going by; null for an alert message, which has none.
 */
export function retryRecord(item: OutboxItem, attempts: number, error: string): DeliveryRecord | null {
  if (item.kind === 'alert') return null;
  return {
    status: 'pending',
    channel: item.resolved?.channel ?? item.channel,
    to: item.resolved?.to ?? item.to,
    reason: `attempt ${attempts} failed (${error}); retrying`,
  };
}
