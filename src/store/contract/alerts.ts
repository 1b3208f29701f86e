/**
 * Alerts in the store (docs/alerts.md): the failures an alert is raised for, the
 * message written with the failure, and the hour's summary of suppressed ones.
 */

/**
 * The failures an alert is raised for (docs/alerts.md), a tool call waiting for an
 * operator's decision (`approval.requested`), and a budget spent for its window
 * (`budget.exceeded`, docs/budgets.md).
 */
export const ALERT_EVENTS = [
  'run.failed',
  'delivery.failed',
  'callback.failed',
  'approval.requested',
  'budget.exceeded',
] as const;

export type AlertEvent = (typeof ALERT_EVENTS)[number];

/**
 * One failure's alert message (docs/alerts.md), put in the delivery outbox (kind `alert`) in the
 * transaction that records the failure, so it exists once, however many replicas there are.
 */
export interface NewAlert {
  event: AlertEvent;
  /** The run (or heartbeat, for a reply's delivery) that failed, or that waits for a decision. */
  refId: string;
  /** The alert route: a configured channel and a recipient on it. */
  channel: string;
  to: string;
  text: string;
  /**
   * Alert messages enqueued in the rolling hour before this one (summaries aside) at which it is
   * kept as `suppressed` instead, to be counted in the hour's summary.
   */
  maxPerHour: number;
}

/** What became of an alert: `queued` in the outbox, or `suppressed` (over the hour's cap). */
export type AlertOutcome = 'queued' | 'suppressed';

/** How many suppressed failures of each kind a summary sums up. */
export type AlertCounts = Record<AlertEvent, number>;

/** The summary message of an hour's suppressed alerts, made from their counts. */
export type AlertSummaryText = (
  counts: AlertCounts,
  total: number,
) => { channel: string; to: string; text: string };
