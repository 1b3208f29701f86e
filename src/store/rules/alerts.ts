/**
 * Alerts in the store, the same on every driver (docs/alerts.md): an alert is a row of the
 * delivery outbox, kind `alert`, written in the transaction that records its failure. Its
 * status says what became of it:
 *
 * - `pending`, then `delivered` or `failed`, as any outbox item (an alert that fails raises none);
 * - `suppressed`: the rolling hour already held `maxPerHour` alert messages; it waits for the
 *   hour's summary;
 * - `summarized`: counted in a summary message, which is an alert row of its own (event
 *   `summary`) and never counts toward the cap.
 *
 * The cap counts the alert messages of the last hour through the partial index of exactly
 * `COUNTED_ALERTS` (each driver's migration makes it), so the count reads only those rows.
 */
import type { AlertCounts, AlertEvent } from '../types.js';

/** The cap's rolling window, and the age of the oldest suppressed alert that makes a summary due. */
export const ALERT_WINDOW_MS = 60 * 60 * 1000;

/** The `main_session_key` of alert rows: they belong to no session and never read its last route. */
export const ALERT_SESSION_KEY = 'alerts';

/** The `alert_event` of a summary row. */
export const SUMMARY_EVENT = 'summary';

/** Alert messages that count toward the cap: the index `deliveries_alerts` holds exactly these. */
export const COUNTED_ALERTS = `kind = 'alert' AND alert_event <> 'summary' AND status NOT IN ('suppressed', 'summarized')`;

/** The counts of a summary, from the events of the alerts it sums up. */
export function countAlerts(events: readonly string[]): AlertCounts {
  const counts: AlertCounts = {
    'run.failed': 0,
    'delivery.failed': 0,
    'callback.failed': 0,
    'approval.requested': 0,
    'budget.exceeded': 0,
  };
  for (const event of events) {
    if (event in counts) counts[event as AlertEvent]++;
  }
  return counts;
}
