/**
 * Alerts on SQLite (store/rules/alerts.ts, docs/alerts.md): enqueued inside the transaction
 * that records the failure; the cap's count and the insert need no lock of their own, since
 * the file has one writer and every write transaction is IMMEDIATE.
 */
import type Database from 'better-sqlite3';
import { uuidv7 } from '../../util/ids.js';
import {
  ALERT_SESSION_KEY,
  ALERT_WINDOW_MS,
  COUNTED_ALERTS,
  countAlerts,
  SUMMARY_EVENT,
} from '../rules/alerts.js';
import type { AlertCounts, AlertOutcome, AlertSummaryText, NewAlert } from '../types.js';

export class SqliteAlerts {
  private readonly s;

  constructor(private readonly db: Database.Database) {
    this.s = {
      // Through deliveries_alerts, whose WHERE is COUNTED_ALERTS.
      counted: db
        .prepare<[number], number>(
          `SELECT COUNT(*) FROM deliveries WHERE ${COUNTED_ALERTS} AND created_at > ?`,
        )
        .pluck(),
      insert: db.prepare(
        `INSERT INTO deliveries (id, kind, ref_id, main_session_key, channel, recipient, text, status, alert_event,
                                 next_attempt_at, created_at, updated_at)
         VALUES (?, 'alert', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      // Through deliveries_suppressed.
      oldestSuppressed: db
        .prepare<[], number | null>(`SELECT MIN(created_at) FROM deliveries WHERE status = 'suppressed'`)
        .pluck(),
      summarize: db
        .prepare<[number], string>(
          `UPDATE deliveries SET status = 'summarized', updated_at = ?
            WHERE status = 'suppressed' AND kind = 'alert' RETURNING alert_event`,
        )
        .pluck(),
      prune: db.prepare(
        `DELETE FROM deliveries WHERE kind = 'alert' AND status <> 'pending'
            AND updated_at <= ?`,
      ),
    };
  }

  /** For use inside the transaction that records the failure. */
  enqueue(alert: NewAlert, now: number): AlertOutcome {
    const sent = this.s.counted.get(now - ALERT_WINDOW_MS) ?? 0;
    const outcome: AlertOutcome = sent >= alert.maxPerHour ? 'suppressed' : 'queued';
    this.insert(alert.event, alert, outcome === 'queued' ? 'pending' : 'suppressed', now);
    return outcome;
  }

  summarize(now: number, summary: AlertSummaryText): AlertCounts | undefined {
    const oldest = this.s.oldestSuppressed.get();
    if (oldest === null || oldest === undefined || oldest > now - ALERT_WINDOW_MS) return undefined;
    return this.db
      .transaction(() => {
        const events = this.s.summarize.all(now);
        if (events.length === 0) return undefined;
        const counts = countAlerts(events);
        const message = summary(counts, events.length);
        this.insert(SUMMARY_EVENT, { refId: '', ...message }, 'pending', now);
        return counts;
      })
      .immediate();
  }

  /** Finished alert rows older than `olderThan` (an alert belongs to no run's retention). */
  prune(olderThan: number): void {
    this.s.prune.run(olderThan);
  }

  private insert(
    event: string,
    alert: { refId: string; channel: string; to: string; text: string },
    status: 'pending' | 'suppressed',
    now: number,
  ): void {
    this.s.insert.run(
      `dlv_${uuidv7(now)}`,
      alert.refId,
      ALERT_SESSION_KEY,
      alert.channel,
      alert.to,
      alert.text,
      status,
      event,
      now,
      now,
      now,
    );
  }
}
