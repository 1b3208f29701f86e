/**
 * Alerts on PostgreSQL (store/rules/alerts.ts, docs/alerts.md). An alert is enqueued in the
 * transaction that records its failure, so it exists once whichever replica recorded it. The
 * cap's count and the insert run under one transaction-level advisory lock (`ALERT_LOCK`), taken
 * by a statement of its own before them: under READ COMMITTED the count's statement then sees
 * every alert committed by a replica that held the lock before, so replicas failing at the same
 * moment cannot together overshoot `maxPerHour`. The summary takes the same lock.
 */
import type pg from 'pg';
import { uuidv7 } from '../../util/ids.js';
import {
  ALERT_SESSION_KEY,
  ALERT_WINDOW_MS,
  COUNTED_ALERTS,
  countAlerts,
  SUMMARY_EVENT,
} from '../rules/alerts.js';
import type { AlertCounts, AlertOutcome, AlertSummaryText, NewAlert } from '../types.js';
import { inTransaction, read } from './db.js';

/** The alerts' advisory lock, in the key space of the session keys' locks (hashtextextended). */
const ALERT_LOCK = `SELECT pg_advisory_xact_lock(hashtextextended('agentgate:alerts', 0))`;

/** Inserts an alert row, pending or suppressed by the cap; answers its status. Through deliveries_alerts. */
const INSERT_ALERT = `
  INSERT INTO deliveries (id, kind, ref_id, main_session_key, channel, recipient, text, status, alert_event,
                          next_attempt_at, created_at, updated_at)
  SELECT $1::text, 'alert', $2::text, $3::text, $4::text, $5::text, $6::text,
         CASE WHEN (SELECT count(*) FROM deliveries WHERE ${COUNTED_ALERTS} AND created_at > $8::bigint - $10::bigint)
                   >= $9::bigint THEN 'suppressed' ELSE 'pending' END,
         $7::text, $8::bigint, $8::bigint, $8::bigint
  RETURNING status`;

const INSERT_SUMMARY = `
  INSERT INTO deliveries (id, kind, ref_id, main_session_key, channel, recipient, text, status, alert_event,
                          next_attempt_at, created_at, updated_at)
  VALUES ($1, 'alert', '', $2, $3, $4, $5, 'pending', '${SUMMARY_EVENT}', $6, $6, $6)`;

/** A statement runner: a transaction's client, or a pipelined transaction's `send`. */
export type Send = (text: string, values?: unknown[]) => Promise<pg.QueryResult>;

/** Inside the transaction that records the failure: the lock, then the capped insert. */
export async function enqueueAlertsInTx(
  send: Send,
  alerts: readonly { alert: NewAlert; now: number }[],
): Promise<AlertOutcome[]> {
  if (alerts.length === 0) return [];
  const locked = send(ALERT_LOCK);
  const inserted = alerts.map(({ alert, now }) =>
    send(INSERT_ALERT, [
      `dlv_${uuidv7(now)}`,
      alert.refId,
      ALERT_SESSION_KEY,
      alert.channel,
      alert.to,
      alert.text,
      alert.event,
      now,
      alert.maxPerHour,
      ALERT_WINDOW_MS,
    ]),
  );
  await locked;
  const outcomes: AlertOutcome[] = [];
  for (const result of inserted) {
    outcomes.push((await result).rows[0]?.status === 'pending' ? 'queued' : 'suppressed');
  }
  return outcomes;
}

/** See DeliveryOutboxStore.summarizeAlerts: a cheap read first, the lock only when one is due. */
export async function summarizeAlerts(
  pool: pg.Pool,
  now: number,
  summary: AlertSummaryText,
): Promise<AlertCounts | undefined> {
  const [row] = await read<{ oldest: number | null }>(
    pool,
    `SELECT MIN(created_at) AS oldest FROM deliveries WHERE status = 'suppressed'`,
    [],
  );
  if (row?.oldest === null || row?.oldest === undefined || row.oldest > now - ALERT_WINDOW_MS)
    return undefined;
  return inTransaction(pool, async (tx) => {
    await tx.query(ALERT_LOCK);
    // Another replica may have summed them up while this one waited for the lock: then none is left.
    const { rows } = await tx.query<{ alert_event: string }>(
      `UPDATE deliveries SET status = 'summarized', updated_at = $1
        WHERE status = 'suppressed' AND kind = 'alert' RETURNING alert_event`,
      [now],
    );
    if (rows.length === 0) return undefined;
    const counts = countAlerts(rows.map((r) => r.alert_event));
    const message = summary(counts, rows.length);
    await tx.query(INSERT_SUMMARY, [
      `dlv_${uuidv7(now)}`,
      ALERT_SESSION_KEY,
      message.channel,
      message.to,
      message.text,
      now,
    ]);
    return counts;
  });
}
