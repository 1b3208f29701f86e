/**
 * The writes one part of the store makes inside another part's transaction, the one shape
 * both drivers give them (docs/architecture.md, "Writing inside a transaction"): a completion
 * appends its turn and makes its callback due, a heartbeat consumes its events and enqueues
 * its reply, a delivery's end keeps its route and raises its alert — each in the transaction
 * of the write that caused it, through the driver's writer, never by a part calling another.
 *
 * On SQLite a write returns at once (`TxWriter<'sync'>`): it runs synchronously inside the
 * open better-sqlite3 transaction, with no `await` in the middle. On PostgreSQL it returns a
 * promise (`TxWriter<'async'>`), a writer per transaction, made on its client.
 */
import type { NewOutboxItem } from '../rows.js';
import type { AlertOutcome, DeliveryRoute, NewAlert, NewEvent } from '../types.js';
import type { SpendRow } from './budgets.js';
import type { TranscriptRow } from './completion.js';

export type TxMode = 'sync' | 'async';

/** What a write gives back: the value itself on SQLite, a promise of it on PostgreSQL. */
export type TxResult<Mode extends TxMode, T> = Mode extends 'sync' ? T : Promise<T>;

export interface TxWriter<Mode extends TxMode> {
  /** Appends transcript entries, in order. */
  appendTranscript(rows: readonly TranscriptRow[]): TxResult<Mode, void>;
  /** Inserts system events (a run's summary), in order. */
  insertEvents(events: readonly NewEvent[]): TxResult<Mode, void>;
  /** Marks a session's pending events consumed; answers how many were. */
  consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): TxResult<Mode, number>;
  /** Puts a reply in the delivery outbox. */
  enqueueDelivery(item: NewOutboxItem, now: number): TxResult<Mode, void>;
  /** Keeps `route` as the main session's last one. */
  writeRoute(mainSessionKey: string, route: DeliveryRoute, now: number): TxResult<Mode, void>;
  /** A run's result is final: its completion callback (if any) becomes due; a second call does nothing. */
  armCallback(runId: string, now: number, traceParent: string | null): TxResult<Mode, void>;
  /** Enqueues an alert message under the hour's cap (docs/alerts.md). */
  enqueueAlert(alert: NewAlert, now: number): TxResult<Mode, AlertOutcome>;
  /** Adds to budgets' counters (docs/budgets.md; rows from `planSpend`); nothing for none. */
  addSpend(rows: readonly SpendRow[]): TxResult<Mode, void>;
}
