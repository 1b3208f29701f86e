/**
 * What an accept commits, decided the same on every driver (docs/architecture.md, "The store's
 * rules, written once"). The driver reads what was there before — the key's earlier record, the
 * newest pending event of each woken session — and writes what `planAccept` returns (the events
 * and the runs, `EVENT_COLUMNS`/`eventValues` and `RUN_COLUMNS`/`runValues`), then the key's
 * answer, in the accept's group-committed transaction.
 *
 * - A key used before, inside its window, replays its answer when the body is the same, and is
 *   a conflict otherwise (docs/callers.md); nothing else is written.
 * - A wake whose text is the same as its session's newest pending event is coalesced into it
 *   (no second event); otherwise it is queued, and is that session's newest from then on.
 * - A run to deliver starts with its delivery record pending, to the channel and recipient
 *   it asked for; a run not to deliver, with none.
 */
import { attachmentsColumn } from '../rows.js';
import type { Flag } from '../run-rows.js';
import type {
  AcceptResult,
  Action,
  Committed,
  IdempotencyClaim,
  NewEvent,
  NewRun,
  StoredAnswer,
} from '../types.js';

/** An accept as the drivers' group commit takes it. */
export interface PendingAccept {
  actions: Action[];
  render: (committed: Committed[]) => StoredAnswer;
  idempotency: IdempotencyClaim | undefined;
}

/** A key's earlier record, as both drivers read it. */
export interface EarlierAnswer {
  body_hash: string;
  status: number;
  body: string;
}

/** The verdict on a key used before: its answer again for the same body, a conflict for another. */
export function replayOrConflict(earlier: EarlierAnswer, bodyHash: string): AcceptResult {
  return earlier.body_hash === bodyHash
    ? { kind: 'replay', answer: { status: earlier.status, body: earlier.body } }
    : { kind: 'conflict' };
}

/** The verdict on a key's repeat after `first`, its first use in the same batch. */
export function repeatOf(first: AcceptResult, sameBody: boolean): AcceptResult {
  return sameBody && first.kind !== 'conflict'
    ? { kind: 'replay', answer: first.answer }
    : { kind: 'conflict' };
}

/** A session's newest pending event, which a wake with the same text is coalesced into. */
export interface NewestPending {
  id: string;
  text: string;
}

/** Where `planAccept` finds each session's newest pending event, and records a wake it queues. */
export interface PendingWakes {
  get(sessionKey: string): NewestPending | undefined;
  set(sessionKey: string, newest: NewestPending): unknown;
}

export interface AcceptPlan {
  result: Extract<AcceptResult, { kind: 'committed' }>;
  /** The wakes queued, in order. */
  events: NewEvent[];
  /** The runs, in order. */
  runs: NewRun[];
}

/** An accept whose key (if any) was free: what it commits, and its answer. */
export function planAccept(item: PendingAccept, newest: PendingWakes): AcceptPlan {
  const events: NewEvent[] = [];
  const runs: NewRun[] = [];
  const committed = item.actions.map((action): Committed => {
    if (action.kind === 'agent') {
      runs.push(action.run);
      return { kind: 'agent', runId: action.run.id };
    }
    const { event } = action;
    const last = newest.get(event.sessionKey);
    if (last && last.text === event.text) return { kind: 'wake', eventId: last.id, outcome: 'coalesced' };
    events.push(event);
    newest.set(event.sessionKey, { id: event.id, text: event.text });
    return { kind: 'wake', eventId: event.id, outcome: 'queued' };
  });
  return { result: { kind: 'committed', committed, answer: item.render(committed) }, events, runs };
}

/** The columns of an accepted event's row, in the order of `eventValues`. */
export const EVENT_COLUMNS = 'id, session_key, ts, text, source, wake_mode, token_id, trace_parent';

export function eventValues(e: NewEvent): unknown[] {
  return [e.id, e.sessionKey, e.ts, e.text, e.source, e.wakeMode, e.tokenId ?? null, e.traceParent ?? null];
}

/** The columns of an accepted run's row, in the order of `runValues`. */
export const RUN_COLUMNS = `id, agent_id, session_key, main_session_key, name, message, model, thinking,
  timeout_seconds, wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at,
  delivery_status, delivery_channel, delivery_to, retry_of, token_id, trace_parent, attachments, stream, hook_id`;

/** A run's row; `flag` writes a boolean as the driver's flag column holds it (store/rows.ts). */
export function runValues(r: NewRun, flag: (value: boolean) => Flag): unknown[] {
  return [
    r.id,
    r.agentId,
    r.sessionKey,
    r.mainSessionKey,
    r.name,
    r.message,
    r.model,
    r.thinking,
    r.timeoutSeconds,
    r.wakeMode,
    flag(r.deliver),
    r.channel,
    r.to,
    flag(r.allowUnsafeExternalContent),
    r.source,
    r.createdAt,
    // Its initial delivery record.
    r.deliver ? 'pending' : 'none',
    r.deliver ? r.channel : null,
    r.deliver ? r.to : null,
    r.retryOf ?? null,
    r.tokenId ?? null,
    r.traceParent ?? null,
    attachmentsColumn(r),
    flag(r.stream === true),
    r.hookId ?? null,
  ];
}
