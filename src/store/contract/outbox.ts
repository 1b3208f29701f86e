/** The store's delivery outbox part (docs/agent-runs.md): replies waiting to be delivered, part by part. */
import type { AlertCounts, AlertOutcome, AlertSummaryText, NewAlert } from './alerts.js';
import type { DeliveryRecord, DeliveryRoute } from './values.js';

/** A reply waiting in the outbox to be delivered (or being delivered, part by part). */
export interface OutboxItem {
  id: string;
  /** A run's or a heartbeat's reply, or an alert message (docs/alerts.md), which updates no record. */
  kind: 'run' | 'heartbeat' | 'alert';
  /** The run or heartbeat whose delivery record this item updates (an alert's: the one that failed). */
  refId: string;
  mainSessionKey: string;
  /** As requested: a channel id or `last`. */
  channel: string;
  to: string | null;
  text: string;
  /** Where it goes, fixed at the first attempt so retries and resumes go to the same place. */
  resolved: DeliveryRoute | null;
  partsSent: number;
  attempts: number;
  /** When the next attempt may start (ms since the epoch): enqueue time, or the retry time. */
  nextAttemptAt: number;
  /** The span of the run or heartbeat that made the reply, to continue (docs/tracing.md); null for none. */
  traceParent: string | null;
}

export interface DeliveryOutboxStore {
  /**
   * What the delivery engine may work on, oldest first (in enqueue order), up to
   * `limit`: for each fixed route (channel and recipient) its oldest pending item,
   * due or not — later items to the same recipient wait behind it, so replies
   * keep their order — and every pending item whose route is not fixed yet.
   */
  deliveryHeads(limit: number): Promise<OutboxItem[]>;
  resolveDelivery(id: string, route: DeliveryRoute, now: number): Promise<void>;
  /** Records that parts 1..partsSent have been sent. */
  markPartsSent(id: string, partsSent: number, now: number): Promise<void>;
  /** A failed attempt that will be retried at `nextAttemptAt`; the run/heartbeat shows why. */
  retryDelivery(
    item: OutboxItem,
    attempts: number,
    nextAttemptAt: number,
    error: string,
    now: number,
  ): Promise<void>;
  /**
   * Ends a delivery: the outbox item and the run or heartbeat record, and on success the session's
   * last route; with `alert` (a reply that failed: docs/alerts.md), enqueues it in the same
   * transaction and answers what became of it. An alert item ends alone: no record, no route.
   */
  finishDelivery(
    item: OutboxItem,
    record: DeliveryRecord,
    now: number,
    alert?: NewAlert,
  ): Promise<AlertOutcome | undefined>;
  /**
   * Once the oldest `suppressed` alert is an hour old (docs/alerts.md, "The cap"), marks every
   * suppressed alert `summarized` and enqueues one summary message made by `summary` from their
   * counts, in one transaction, so one replica does it once; undefined when none is due.
   */
  summarizeAlerts(now: number, summary: AlertSummaryText): Promise<AlertCounts | undefined>;
}
