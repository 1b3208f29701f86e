/**
 * The operators' views (docs/operating.md, "Admin API") as both drivers read them: the run list
 * row (a RunView plus where the run came from, or its summary with excerpts of its texts) and the
 * outbox item view.
 */
import { excerptOf, prefixColumn } from './excerpts.js';
import {
  iso,
  RUN_VIEW_COLUMNS,
  RUN_VIEW_FACT_COLUMNS,
  type RunFactRow,
  type RunRow,
  runViewWith,
  toRunView,
} from './rows.js';
import type { CallbackView, DeliveryView, RunListView, RunSummaryView } from './types.js';

export interface RunListRow extends RunRow {
  seq: number;
  source: string;
  name: string | null;
  retry_of: string | null;
}

/** The columns `toRunListView` reads, for a SELECT list. */
export const RUN_LIST_COLUMNS = `seq, ${RUN_VIEW_COLUMNS}, source, name, retry_of`;

export function toRunListView(row: RunListRow): RunListView {
  return { ...toRunView(row), source: row.source, name: row.name, retryOf: row.retry_of };
}

/** A run list row of the summary view: the first characters of the reply and the error only. */
export interface RunSummaryRow extends RunFactRow {
  seq: number;
  source: string;
  name: string | null;
  retry_of: string | null;
  reply_prefix: string | null;
  error_prefix: string | null;
}

/** The columns `toRunSummaryView` reads: never a whole reply or error (store/excerpts.ts). */
export const RUN_SUMMARY_COLUMNS = `seq, ${RUN_VIEW_FACT_COLUMNS}, ${prefixColumn('reply', 'reply_prefix')},
  ${prefixColumn('error', 'error_prefix')}, source, name, retry_of`;

export function toRunSummaryView(row: RunSummaryRow): RunSummaryView {
  const texts = { replyExcerpt: excerptOf(row.reply_prefix), errorExcerpt: excerptOf(row.error_prefix) };
  return { ...runViewWith(row, texts), source: row.source, name: row.name, retryOf: row.retry_of };
}

export interface DeliveryListRow {
  id: string;
  kind: 'run' | 'heartbeat' | 'alert';
  ref_id: string;
  channel: string;
  recipient: string | null;
  resolved_channel: string | null;
  resolved_to: string | null;
  status: string;
  attempts: number;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export const DELIVERY_LIST_COLUMNS = `id, kind, ref_id, channel, recipient, resolved_channel, resolved_to, status, attempts,
  last_error, created_at, updated_at`;

/**
 * An outbox row as `GET /api/deliveries` shows it. A delivery the engine ended
 * as `skipped` (no recipient could be found) failed from the operator's point of
 * view, and shows as `failed` with its reason. `attempts` in the row counts the
 * failed attempts that were retried; a finished item whose route was fixed ended
 * by one more attempt, which is counted here.
 */
export function toDeliveryView(row: DeliveryListRow): DeliveryView {
  const status: DeliveryView['status'] =
    row.status === 'pending' ? 'pending' : row.status === 'delivered' ? 'delivered' : 'failed';
  const resolved = row.resolved_channel !== null;
  return {
    id: row.id,
    runId: row.kind === 'run' ? row.ref_id : null,
    heartbeatId: row.kind === 'heartbeat' ? row.ref_id : null,
    channel: row.resolved_channel ?? row.channel,
    to: resolved ? row.resolved_to : row.recipient,
    status,
    attempts: row.attempts + (status !== 'pending' && resolved ? 1 : 0),
    lastError: row.last_error,
    createdAt: iso(row.created_at) as string,
    updatedAt: iso(row.updated_at) as string,
  };
}

/** Outbox statuses a `?status=` filter of the view matches (`failed` includes the engine's `skipped`). */
export const DELIVERY_STATUSES_OF: Record<DeliveryView['status'], readonly string[]> = {
  pending: ['pending'],
  delivered: ['delivered'],
  failed: ['failed', 'skipped'],
};

export interface CallbackListRow {
  id: string;
  run_id: string;
  url: string;
  status: string;
  attempts: number;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export const CALLBACK_LIST_COLUMNS = 'id, run_id, url, status, attempts, last_error, created_at, updated_at';

/** Callback outbox statuses a `?status=` filter matches (`pending` includes `waiting`: the run has not ended). */
export const CALLBACK_STATUSES_OF: Record<CallbackView['status'], readonly string[]> = {
  pending: ['waiting', 'pending'],
  delivered: ['delivered'],
  failed: ['failed'],
};

/** The WHERE clause of a callback list filter (statuses from a closed set, written as literals). */
export function callbackStatusWhere(status: CallbackView['status'] | undefined): string {
  if (status === undefined) return '';
  const statuses = CALLBACK_STATUSES_OF[status];
  if (!statuses) throw new Error(`unknown callback status ${status}`);
  return statuses.length === 1
    ? `WHERE status = '${statuses[0]}'`
    : `WHERE status IN (${statuses.map((s) => `'${s}'`).join(', ')})`;
}

/** A callback row as `GET /api/callbacks` shows it: the URL reduced to its origin. */
export function toCallbackView(row: CallbackListRow): CallbackView {
  let origin: string;
  try {
    origin = new URL(row.url).origin;
  } catch {
    origin = '(unparseable URL)';
  }
  return {
    id: row.id,
    runId: row.run_id,
    origin,
    status: row.status === 'delivered' ? 'delivered' : row.status === 'failed' ? 'failed' : 'pending',
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: iso(row.created_at) as string,
    updatedAt: iso(row.updated_at) as string,
  };
}

/** The route a redelivery takes: the one the last delivery fixed, else the one it asked for. */
export interface LastDeliveryRow {
  channel: string;
  recipient: string | null;
  resolved_channel: string | null;
  resolved_to: string | null;
  status: string;
}

/**
 * The one idempotency row `/readyz`'s commit probe rewrites (docs/operating.md, Health and
 * readiness): a real write through the table and index every keyed hook writes, in place, so
 * it never grows. No hook can claim it: a hook's scope is `<hooks.path>/<name>`, two slashes
 * at least. Its created_at is the last probe's time, so pruning drops it only after a day
 * without a probe (and the next probe writes it again).
 */
export const PROBE_SCOPE = '/readyz';
export const PROBE_KEY = 'commit-probe';
