/**
 * Rows as both drivers store them (the same column names on SQLite and
 * PostgreSQL, times as epoch ms) and how they read back as the API's views.
 */
import { uuidv7 } from '../util/ids.js';
import { waitingForOf } from './rules/steps.js';
import { type UsageColumns, usageViewOf } from './rules/usage.js';
import type {
  Attachment,
  AttachmentInfo,
  CallbackItem,
  CallbackStatus,
  DeliveryRecord,
  EventView,
  HeartbeatView,
  OutboxItem,
  PendingEvent,
  RunStatus,
  RunView,
  WakeMode,
} from './types.js';

/** Every run status, for checking a filter before it goes into SQL as a literal. */
export const RUN_STATUSES: readonly RunStatus[] = [
  'queued',
  'running',
  'waiting',
  'succeeded',
  'failed',
  'timed_out',
];

/** A seq bound above every row: a list with no `before` starts there. */
export const NEWEST = Number.MAX_SAFE_INTEGER;

/**
 * Finished callback, delivery and alert rows are kept this long past the idempotency window
 * (24 h): a week in all, for inspection (docs/operating.md, Retention).
 */
export const FINISHED_ROW_EXTRA_MS = 6 * 24 * 3600_000;

export interface DeliveryColumns {
  delivery_status: DeliveryRecord['status'];
  delivery_channel: string | null;
  delivery_to: string | null;
  delivery_reason: string | null;
}

export interface RunRow extends DeliveryColumns, UsageColumns {
  id: string;
  status: RunView['status'];
  agent_id: string;
  session_key: string;
  model: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  reply: string | null;
  error: string | null;
  callback_status: CallbackStatus;
  callback_attempts: number;
  /** The hook token that accepted the run (docs/senders.md); null when none did. */
  token_id: string | null;
  /** The run's files without their bytes, as JSON (`attachmentsColumn`); null for none. */
  attachments: string | null;
  /** The loop's committed steps (run_steps), counted as they are appended. */
  steps: number;
  /** The call a waiting run waits on, as JSON (rules/steps.ts); null otherwise. */
  waiting_for: string | null;
  /** Until when a queued run is held back (store/rules/claim-hold.ts); null otherwise. */
  not_before: number | null;
}

export interface HeartbeatRow extends DeliveryColumns, UsageColumns {
  id: string;
  started_at: number;
  finished_at: number;
  status: 'succeeded' | 'failed';
  event_count: number;
  reply: string | null;
  error: string | null;
}

/** The columns of a RunView but its two texts (the reply and the error), for a SELECT list. */
export const RUN_VIEW_FACT_COLUMNS = `id, status, agent_id, session_key, model, created_at, started_at, finished_at,
                delivery_status, delivery_channel, delivery_to, delivery_reason, callback_status, callback_attempts, token_id, attachments, steps, waiting_for, not_before,
                usage_model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd`;

/** The columns `toRunView` reads, for a SELECT list. */
export const RUN_VIEW_COLUMNS = `${RUN_VIEW_FACT_COLUMNS}, reply, error`;

export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

const deliveryOf = (row: DeliveryColumns): DeliveryRecord => ({
  status: row.delivery_status,
  channel: row.delivery_channel,
  to: row.delivery_to,
  reason: row.delivery_reason,
});

/** A run row without its two texts (`RUN_VIEW_FACT_COLUMNS`). */
export type RunFactRow = Omit<RunRow, 'reply' | 'error'>;

/**
 * A RunView's fields from the row, with `texts` where the reply and the error go: the texts
 * themselves (`toRunView`), or the run list's excerpts of them (admin-rows.ts).
 */
export function runViewWith<Texts extends object>(
  row: RunFactRow,
  texts: Texts,
): Omit<RunView, 'reply' | 'error'> & Texts {
  return {
    runId: row.id,
    status: row.status,
    agentId: row.agent_id,
    sessionKey: row.session_key,
    // The model that answered (the last call's, a fallback's: docs/agent-runs.md, "Fallbacks"),
    // written with the completion; before that, the model the run was accepted with.
    model: row.usage_model ?? row.model,
    createdAt: iso(row.created_at) as string,
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    // Only while it waits: the lease that takes the run clears it.
    notBefore: iso(row.not_before ?? null),
    ...texts,
    delivery: deliveryOf(row),
    callback: { status: row.callback_status, attempts: row.callback_attempts },
    tokenId: row.token_id,
    attachments: attachmentInfoOf(row.attachments),
    steps: row.steps,
    waitingFor: waitingForOf(row.waiting_for),
    usage: usageViewOf(row),
  };
}

export function toRunView(row: RunRow): RunView {
  return runViewWith(row, { reply: row.reply, error: row.error });
}

/**
 * `runs.attachments`: the run's files without their bytes, as a JSON array of
 * `{name, mediaType, bytes}` (the RunView's shape), so every RunView is read from
 * the run's own row; null for none. The bytes live in `run_attachments`.
 */
export function attachmentsColumn(run: {
  attachments?: readonly AttachmentInfo[] | null;
  attachmentsFrom?: { list: readonly AttachmentInfo[] } | null;
}): string | null {
  const list = run.attachments?.length ? run.attachments : run.attachmentsFrom?.list;
  if (!list || list.length === 0) return null;
  return JSON.stringify(list.map(({ name, mediaType, bytes }) => ({ name, mediaType, bytes })));
}

export function attachmentInfoOf(column: string | null | undefined): AttachmentInfo[] {
  return column ? (JSON.parse(column) as AttachmentInfo[]) : [];
}

/** A `run_attachments` row, the same columns on both drivers. */
export interface AttachmentRow {
  name: string;
  media_type: string;
  bytes: number;
  data: Buffer;
}

export const ATTACHMENT_COLUMNS = 'name, media_type, bytes, data';

export const toAttachment = (row: AttachmentRow): Attachment => ({
  name: row.name,
  mediaType: row.media_type,
  bytes: Number(row.bytes),
  data: row.data,
});

export function toHeartbeatView(row: HeartbeatRow): HeartbeatView {
  return {
    id: row.id,
    startedAt: iso(row.started_at) as string,
    finishedAt: iso(row.finished_at) as string,
    status: row.status,
    eventCount: row.event_count,
    reply: row.reply,
    error: row.error,
    delivery: deliveryOf(row),
    usage: usageViewOf(row),
  };
}

/** A delivery outbox row; PostgreSQL also selects `seq`, which the item does not carry. */
export interface OutboxRow {
  id: string;
  kind: OutboxItem['kind'];
  ref_id: string;
  main_session_key: string;
  channel: string;
  recipient: string | null;
  text: string;
  resolved_channel: string | null;
  resolved_to: string | null;
  parts_sent: number;
  attempts: number;
  next_attempt_at: number;
  trace_parent: string | null;
}

/** A reply to put in the outbox, written inside the transaction that produced it. */
export interface NewOutboxItem {
  kind: 'run' | 'heartbeat';
  refId: string;
  mainSessionKey: string;
  channel: string;
  to: string | null;
  text: string;
  /** The span that made the reply (docs/tracing.md); null or absent for none. */
  traceParent?: string | null;
}

/** The columns of a new outbox row, in the order of `outboxValues`. */
export const OUTBOX_COLUMNS = `id, kind, ref_id, main_session_key, channel, recipient, text, next_attempt_at, created_at,
  updated_at, trace_parent`;

/** A reply's new outbox row, due at once. */
export function outboxValues(item: NewOutboxItem, now: number): unknown[] {
  const id = `dlv_${uuidv7(now)}`;
  return [
    id,
    item.kind,
    item.refId,
    item.mainSessionKey,
    item.channel,
    item.to,
    item.text,
    now,
    now,
    now,
    item.traceParent ?? null,
  ];
}

export function toOutboxItem(row: OutboxRow): OutboxItem {
  return {
    id: row.id,
    kind: row.kind,
    refId: row.ref_id,
    mainSessionKey: row.main_session_key,
    channel: row.channel,
    to: row.recipient,
    text: row.text,
    resolved:
      row.resolved_channel !== null && row.resolved_to !== null
        ? { channel: row.resolved_channel, to: row.resolved_to }
        : null,
    partsSent: row.parts_sent,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    traceParent: row.trace_parent ?? null,
  };
}

/** A completion callback row (docs/callers.md), the same columns on both drivers. */
export interface CallbackRow {
  id: string;
  run_id: string;
  url: string;
  attempts: number;
  armed_at: number;
  next_attempt_at: number;
  body: string | null;
  trace_parent: string | null;
}

export function toCallbackItem(row: CallbackRow): CallbackItem {
  return {
    id: row.id,
    runId: row.run_id,
    url: row.url,
    attempts: row.attempts,
    armedAt: row.armed_at,
    nextAttemptAt: row.next_attempt_at,
    body: row.body,
    traceParent: row.trace_parent ?? null,
  };
}

/** An events row as `listEvents` reads it. */
export interface EventRow {
  id: string;
  ts: number;
  text: string;
  source: string;
  status: EventView['status'];
  token_id: string | null;
}

export const toEventView = (row: EventRow): EventView => ({
  id: row.id,
  ts: iso(row.ts) as string,
  text: row.text,
  source: row.source,
  status: row.status,
  tokenId: row.token_id,
});

/** A pending events row as a heartbeat reads it. */
export interface PendingEventRow {
  id: string;
  ts: number;
  text: string;
  source: string;
  wake_mode: WakeMode;
  trace_parent: string | null;
}

export const toPendingEvent = (row: PendingEventRow): PendingEvent => ({
  id: row.id,
  ts: row.ts,
  text: row.text,
  source: row.source,
  wakeMode: row.wake_mode,
  traceParent: row.trace_parent,
});
