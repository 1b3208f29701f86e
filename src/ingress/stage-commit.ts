/**
 * The commit stage: what goes with the commit (the hook span's trace, the idempotency
 * claim — 400 for a bad key —, a streamed answer's slot and subscription: 429/503 over
 * the caps), the durable commit itself (503 when the store cannot take it), and what
 * follows it (409 for a key reused with another body, a replay's header, the workers
 * woken, the log line and the span's ids).
 */
import type { Span } from '@opentelemetry/api';
import type { FastifyReply } from 'fastify';
import { renderAnswer } from '../hook-model/actions.js';
import { HttpError } from '../http/errors.js';
import { traceparentOf } from '../observability/tracing.js';
import type { AcceptResult, Action, Committed, NewRun } from '../store/types.js';
import { logAccepted } from './accepted-log.js';
import type { BuiltHook, DoorRequest, HookDoor } from './hook-request.js';
import { deliveryClaim, idempotencyClaim } from './idempotency.js';
import { wantsEventStream } from './stream-answer.js';

/** A commit that is answered: a fresh one, or the replay of an earlier one. */
export type Accepted = Exclude<AcceptResult, { kind: 'conflict' }>;

export function prepareCommit(
  door: HookDoor,
  state: BuiltHook,
  request: DoorRequest,
  reply: FastifyReply,
): void {
  const { actions } = state;
  // The hook span's own context goes with what is committed, for the worker to continue
  // the trace (docs/tracing.md); null without tracing.
  const span = door.tracing ? request.traceSpan : null;
  state.span = span;
  if (span) stampTrace(actions, traceparentOf(span.spanContext()));
  const scope = `${door.hooksPath}/${state.name}`;
  state.claim =
    state.deliveryId === undefined
      ? idempotencyClaim(request.headers, scope, state.body, state.at)
      : deliveryClaim(scope, state.deliveryId, state.at);
  // A streamed answer (docs/callers.md): its run streams, and its pieces are followed from
  // before the commit, so none is missed.
  const streamed = wantsEventStream(request.headers.accept) ? soleRun(actions) : undefined;
  if (streamed) {
    holdStreamSlot(door, state, reply);
    streamed.stream = true;
    state.streamed = streamed;
    state.subscription = door.deltas.subscribe(streamed.id);
  }
}

/**
 * Over the caps the answer is an error and nothing is committed (docs/callers.md); a slot
 * taken is held until this response closes, whichever answer it turns out to be.
 */
function holdStreamSlot(door: HookDoor, state: BuiltHook, reply: FastifyReply): void {
  const release = door.streamSlots.take(state.token.id, state.hooks.config.hooks.streams);
  const socket = reply.raw.socket;
  // Gone already (its 'close' has passed): the slot is not held by a connection that left.
  if (socket === null || socket.destroyed) release();
  else reply.raw.once('close', release);
}

export function commitActions(door: HookDoor, state: BuiltHook): Promise<AcceptResult> {
  const { actions } = state;
  return door.store.accept(actions, (committed) => renderAnswer(actions, committed), state.claim);
}

export function recordCommit(
  door: HookDoor,
  state: BuiltHook,
  request: DoorRequest,
  reply: FastifyReply,
  result: AcceptResult,
): Accepted {
  // A replay committed nothing: the run it names is the first request's.
  if (result.kind !== 'committed') state.subscription?.close();
  if (result.kind === 'conflict') {
    throw new HttpError(
      'idempotency_conflict',
      'this idempotency key was already used with a different body',
    );
  }
  if (result.kind === 'replay') reply.header('idempotent-replayed', 'true');
  else {
    const { span } = state;
    logAccepted(door.log, request.id, state.target.name, result.committed, span?.spanContext());
    if (span) spanCommitted(span, result.committed);
  }
  return result;
}

/**
 * The run a request commits when it is its only action (`/agent`, or a mapping's single
 * agent action): such a request may be answered as a stream; any other is answered as usual.
 */
function soleRun(actions: readonly Action[]): NewRun | undefined {
  const [only] = actions;
  return actions.length === 1 && only?.kind === 'agent' ? only.run : undefined;
}

/** Each run and event a hook request commits carries the hook span's `traceparent`. */
function stampTrace(actions: readonly Action[], traceParent: string): void {
  for (const action of actions) {
    if (action.kind === 'agent') action.run.traceParent = traceParent;
    else action.event.traceParent = traceParent;
  }
}

/** What a hook request committed, on its span: the run or event ids (docs/tracing.md). */
function spanCommitted(span: Span, committed: readonly Committed[]): void {
  const runIds = committed.flatMap((c) => (c.kind === 'agent' ? [c.runId] : []));
  const eventIds = committed.flatMap((c) => (c.kind === 'wake' ? [c.eventId] : []));
  const [runId] = runIds;
  const [eventId] = eventIds;
  if (runIds.length === 1 && runId !== undefined) span.setAttribute('agentgate.run_id', runId);
  else if (runIds.length > 1) span.setAttribute('agentgate.run_ids', runIds);
  if (eventIds.length === 1 && eventId !== undefined) span.setAttribute('agentgate.event_id', eventId);
  else if (eventIds.length > 1) span.setAttribute('agentgate.event_ids', eventIds);
}
