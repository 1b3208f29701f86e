/**
 * A redelivery (`POST /api/runs/{id}/redeliver`, docs/operating.md), decided the same on every
 * driver (docs/architecture.md, "The store's rules, written once"): the driver reads the run
 * (`REDELIVER_RUN_COLUMNS`) under its write lock and, when `mayRedeliver`, its last delivery;
 * then, if `planRedelivery` says so, inserts the outbox row and sets the run's delivery record
 * back to pending, in the same transaction.
 */
import { uuidv7 } from '../../util/ids.js';
import type { LastDeliveryRow } from '../admin-rows.js';
import { type Flag, isSet } from '../run-rows.js';
import type { RedeliverResult } from '../types.js';

/** The run's columns a redelivery reads. */
export interface RedeliverRunRow {
  reply: string | null;
  deliver: Flag;
  main_session_key: string;
}

export const REDELIVER_RUN_COLUMNS = 'reply, deliver, main_session_key';

/** The columns of the outbox row a redelivery inserts, in the order of its `delivery` values. */
export const REDELIVERY_COLUMNS = `id, kind, ref_id, main_session_key, channel, recipient, text, resolved_channel,
  resolved_to, next_attempt_at, created_at, updated_at`;

export type Redelivery =
  | { result: Exclude<RedeliverResult, 'enqueued'> }
  | {
      result: 'enqueued';
      /** The outbox row's values (`REDELIVERY_COLUMNS`). */
      delivery: unknown[];
      /** The run's delivery record, pending again on this route. */
      channel: string;
      to: string | null;
    };

/** Whether the run has a reply it was asked to deliver: its last delivery is read only then. */
export function mayRedeliver(run: RedeliverRunRow | undefined): run is RedeliverRunRow & { reply: string } {
  return run !== undefined && run.reply !== null && isSet(run.deliver);
}

/**
 * The redelivery of `runId`'s reply, to the route its last delivery took (the one it fixed,
 * else the one it asked for); `last` is read only when `mayRedeliver(run)`.
 */
export function planRedelivery(
  runId: string,
  run: RedeliverRunRow | undefined,
  last: LastDeliveryRow | undefined,
  now: number,
): Redelivery {
  if (!run) return { result: 'not_found' };
  // No outbox item ever: the reply was only a heartbeat acknowledgement, never sent.
  if (!mayRedeliver(run) || !last) return { result: 'nothing_to_deliver' };
  if (last.status === 'pending') return { result: 'delivery_pending' };
  const channel = last.resolved_channel ?? last.channel;
  const to = last.resolved_channel !== null ? last.resolved_to : last.recipient;
  const delivery = [
    `dlv_${uuidv7(now)}`,
    'run',
    runId,
    run.main_session_key,
    channel,
    to,
    run.reply,
    last.resolved_channel,
    last.resolved_to,
    now,
    now,
    now,
  ];
  return { result: 'enqueued', delivery, channel, to };
}
