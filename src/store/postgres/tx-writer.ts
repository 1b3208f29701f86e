/**
 * The writes one part makes inside another's transaction, on PostgreSQL
 * (store/rules/tx-writer.ts): a writer per transaction, on its client, each write
 * a statement whose count does not grow with its rows (`unnest` arrays).
 */
import { type NewOutboxItem, OUTBOX_COLUMNS, outboxValues } from '../rows.js';
import { EVENT_COLUMNS, eventValues } from '../rules/accept.js';
import { SPEND_ADD, SPEND_COLUMNS, SPEND_ORDER, type SpendRow, spendValues } from '../rules/budgets.js';
import type { TranscriptRow } from '../rules/completion.js';
import type { TxWriter } from '../rules/tx-writer.js';
import type { AlertOutcome, DeliveryRoute, NewAlert, NewEvent } from '../types.js';
import { enqueueAlertsInTx } from './alerts.js';
import { armCallbackInTx } from './callbacks.js';
import type { Tx } from './db.js';
import { writeRouteInTx } from './routes.js';

const EVENT_WIDTH = EVENT_COLUMNS.split(',').length;

/** Inserts events, in order, in one statement; its values are `eventColumns`. */
export const INSERT_EVENTS = `
  INSERT INTO events (${EVENT_COLUMNS})
  SELECT ${EVENT_COLUMNS}
    FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
         WITH ORDINALITY AS t(${EVENT_COLUMNS}, n)
   ORDER BY n`;

/** Rows' values as one array per column: the parameters of an `unnest` insert. */
export function columnsOf(rows: readonly unknown[][], width: number): unknown[][] {
  const columns: unknown[][] = Array.from({ length: width }, () => []);
  for (const row of rows) for (let i = 0; i < width; i++) columns[i]?.push(row[i]);
  return columns;
}

export const eventColumns = (events: readonly NewEvent[]) => columnsOf(events.map(eventValues), EVENT_WIDTH);

const APPEND_TRANSCRIPT = `
  INSERT INTO transcripts (session_key, role, content, run_id, ts)
  SELECT session_key, role, content, run_id, ts
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[])
         WITH ORDINALITY AS t(session_key, role, content, run_id, ts, n)
   ORDER BY n`;

const CONSUME_EVENTS = `
  UPDATE events SET status = 'consumed', consumed_at = $1
   WHERE id = ANY($2::text[]) AND session_key = $3 AND status = 'pending'`;

const ENQUEUE_DELIVERY = `
  INSERT INTO deliveries (${OUTBOX_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;

const SPEND_WIDTH = SPEND_COLUMNS.split(',').length;

/** Adds to budgets' counters, in one statement: rows from `planSpend` (one per counter), in `SPEND_ORDER`. */
export const ADD_SPEND = `
  INSERT INTO budget_spend (${SPEND_COLUMNS})
  SELECT ${SPEND_COLUMNS}
    FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::float8[], $6::int8[])
         AS t(${SPEND_COLUMNS})
   ORDER BY ${SPEND_ORDER}
  ${SPEND_ADD}`;

export class PgTxWriter implements TxWriter<'async'> {
  constructor(private readonly tx: Tx) {}

  async appendTranscript(rows: readonly TranscriptRow[]): Promise<void> {
    if (rows.length === 0) return;
    const of = (pick: (row: TranscriptRow) => unknown) => rows.map(pick);
    await this.tx.query(APPEND_TRANSCRIPT, [
      of((r) => r.sessionKey),
      of((r) => r.role),
      of((r) => r.content),
      of((r) => r.runId),
      of((r) => r.ts),
    ]);
  }

  async insertEvents(events: readonly NewEvent[]): Promise<void> {
    if (events.length > 0) await this.tx.query(INSERT_EVENTS, eventColumns(events));
  }

  async consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): Promise<number> {
    if (eventIds.length === 0) return 0;
    const result = await this.tx.query(CONSUME_EVENTS, [now, eventIds, sessionKey]);
    return result.rowCount ?? 0;
  }

  async enqueueDelivery(item: NewOutboxItem, now: number): Promise<void> {
    await this.tx.query(ENQUEUE_DELIVERY, outboxValues(item, now));
  }

  writeRoute(mainSessionKey: string, route: DeliveryRoute, now: number): Promise<void> {
    return writeRouteInTx(this.tx, mainSessionKey, route, now);
  }

  armCallback(runId: string, now: number, traceParent: string | null): Promise<void> {
    return armCallbackInTx(this.tx, runId, now, traceParent);
  }

  async addSpend(rows: readonly SpendRow[]): Promise<void> {
    if (rows.length > 0) await this.tx.query(ADD_SPEND, columnsOf(rows.map(spendValues), SPEND_WIDTH));
  }

  async enqueueAlert(alert: NewAlert, now: number): Promise<AlertOutcome> {
    const [outcome] = await enqueueAlertsInTx(
      (text, values) => this.tx.query(text, values),
      [{ alert, now }],
    );
    return outcome as AlertOutcome;
  }
}
