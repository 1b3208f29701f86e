/**
 * What recording a heartbeat writes, the same on every driver (docs/architecture.md, "The
 * store's rules, written once"): the driver inserts the heartbeat's row (`HEARTBEAT_COLUMNS`,
 * `heartbeatValues`) and writes what `planHeartbeat` returns, in the same transaction.
 *
 * Every heartbeat adds its usage to its budgets' counters (`heartbeatSpend`: a failed turn's
 * calls cost as much). A failed heartbeat writes nothing else: its events stay pending for
 * the next one. A succeeded one consumes its events, appends its turn to the main session's transcript, and
 * puts its reply in the outbox when it has one to deliver.
 */
import type { NewOutboxItem } from '../rows.js';
import type { HeartbeatRecord } from '../types.js';
import { planSpend, type SpendRow } from './budgets.js';
import type { TranscriptRow } from './completion.js';
import { USAGE_COLUMNS, usageValues } from './usage.js';

/** The columns of a heartbeat's row, in the order of `heartbeatValues`. */
export const HEARTBEAT_COLUMNS = `id, session_key, started_at, finished_at, status, event_count, reply, error,
  delivery_status, delivery_channel, delivery_to, delivery_reason, ${USAGE_COLUMNS}`;

/** How many values `heartbeatValues` gives: a driver's placeholders. */
export const HEARTBEAT_WIDTH = HEARTBEAT_COLUMNS.split(',').length;

export function heartbeatValues(r: HeartbeatRecord): unknown[] {
  const d = r.delivery;
  return [
    r.id,
    r.sessionKey,
    r.startedAt,
    r.finishedAt,
    r.status,
    r.eventIds.length,
    r.reply,
    r.error,
    d.status,
    d.channel,
    d.to,
    d.reason,
    ...usageValues(r.usage),
  ];
}

export interface HeartbeatWrites {
  /** The events of `r.sessionKey` it consumed, at `r.finishedAt`. */
  consumed: readonly string[];
  /** Its turn, appended to `r.sessionKey`'s transcript at `r.finishedAt`, with no run. */
  transcript: TranscriptRow[];
  /** The reply to put in the outbox at `r.finishedAt`; null for none. */
  delivery: NewOutboxItem | null;
}

/** What the heartbeat adds to its budgets' counters (docs/budgets.md), whatever its outcome. */
export const heartbeatSpend = (r: HeartbeatRecord): SpendRow[] => planSpend([r]);

/** What follows the heartbeat's row besides its spend; null when nothing does (it failed). */
export function planHeartbeat(r: HeartbeatRecord): HeartbeatWrites | null {
  if (r.status !== 'succeeded') return null;
  return {
    consumed: r.eventIds,
    transcript: r.transcript.map((entry) => ({
      ...entry,
      sessionKey: r.sessionKey,
      runId: null,
      ts: r.finishedAt,
    })),
    delivery:
      r.delivery.status === 'pending' && r.reply !== null
        ? {
            kind: 'heartbeat',
            refId: r.id,
            mainSessionKey: r.sessionKey,
            channel: 'last',
            to: null,
            text: r.reply,
            traceParent: r.traceParent ?? null,
          }
        : null,
  };
}
