/**
 * What the hook ingress's stages share (hooks-routes.ts chains them, in the order of
 * docs/errors.md): the door — what every request uses, assembled once when the routes
 * are registered — and the one state object a request carries from stage to stage,
 * created by the token stage and filled in by the later ones.
 *
 * The state is one object with every field present from the start (null until its stage
 * ran), so every request's state has the same shape. The types that say which stages
 * ran (`TargetedHook`, `BuiltHook`) are given by the stage that fills their fields.
 */
import type { Span } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import type { HookToken } from '../auth/hook-tokens.js';
import type { BudgetBook } from '../budgets/book.js';
import type { HookTarget } from '../hook-model/targets.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { Action, IdempotencyClaim, NewRun, RunView, Store } from '../store/types.js';
import type { DeltaHub, DeltaSubscription } from '../streaming/run-deltas.js';
import type { HookIngress, IngressState } from './hook-ingress.js';
import type { RunCompletions } from './run-completions.js';
import type { StreamSlots } from './stream-slots.js';

/** What every hook request uses: the gateway's parts and settings, resolved once. */
export interface HookDoor {
  readonly store: Store;
  readonly limiter: AuthLimiter;
  readonly log: Logger;
  readonly ingress: HookIngress;
  readonly now: () => number;
  readonly hooksPath: string;
  readonly bodyTimeoutMs: number;
  readonly metrics: GatewayMetrics | undefined;
  readonly tracing: Tracing | undefined;
  readonly completions: RunCompletions;
  readonly deltas: DeltaHub;
  readonly streamSlots: StreamSlots;
  readonly streamKeepAliveMs: number;
  /** The store's `getRun`, for a stream to read its run (bound once, not per stream). */
  readonly readRun: (runId: string) => Promise<RunView | undefined>;
  /** The budgets (docs/budgets.md); undefined with none configured (no check at all). */
  readonly budgets: Pick<BudgetBook, 'refusal'> | undefined;
}

/** One hook request, from its token to its answer. */
export interface HookRequestState {
  // The token stage (stage-token.ts):
  /** The hooks configuration when the token matched: a reload mid-request changes nothing. */
  readonly hooks: IngressState;
  /** The hook token that opened the request. */
  readonly token: HookToken;
  /** The hook name after `hooks.path` (empty on the bare path). */
  readonly name: string;
  /** The targets the name leads to; the payload chooses one (stage-target.ts). */
  readonly candidates: readonly HookTarget[];
  // The target stage (stage-target.ts):
  body: Buffer | null;
  payload: Record<string, unknown> | null;
  /** The candidate that took the payload (also the metrics' `hook` label). */
  target: HookTarget | null;
  // The actions stage (stage-actions.ts):
  /** When the actions were built (ms since the epoch): their `createdAt`, the idempotency record's. */
  at: number;
  actions: Action[] | null;
  /** The sender's delivery id, when the target reads one (docs/senders.md, "Redeliveries"). */
  deliveryId: string | undefined;
  // The commit stage (stage-commit.ts):
  /** The request's SERVER span with tracing on (docs/tracing.md), else null. */
  span: Span | null;
  claim: IdempotencyClaim | undefined;
  /** The run answered as a stream (docs/callers.md, "Streamed answers"), if asked for. */
  streamed: NewRun | undefined;
  /** The streamed run's pieces, followed from before the commit. */
  subscription: DeltaSubscription | undefined;
}

/** After the target stage: the body read and parsed, the target chosen. */
export interface TargetedHook extends HookRequestState {
  body: Buffer;
  payload: Record<string, unknown>;
  target: HookTarget;
}

/** After the actions stage: what the request is to commit. */
export interface BuiltHook extends TargetedHook {
  actions: Action[];
}

/**
 * The hook routes' request types, declared without a schema: a schema would add
 * a validation step per request on the hot path, and the body is parsed here on
 * purpose (any Content-Type, in the order of docs/errors.md). `*` is absent on the
 * bare hooks path; the body is absent when none was sent.
 */
export interface HookRoute {
  Params: { '*'?: string };
  Querystring: Record<string, unknown>;
  Body: Buffer | undefined;
}

export type DoorRequest = FastifyRequest<HookRoute>;

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The hook request's state, set by the token stage. Decorated null in the hook
     * routes' scope only, so every request object keeps one shape (Fastify 5 wants
     * null and assignment, not a shared object as the default).
     */
    hookState: HookRequestState | null;
  }
}

/** The state the token stage set: the body parser and the handler run only after it. */
export function hookStateOf(request: FastifyRequest): HookRequestState {
  const state = request.hookState;
  if (state === null) throw new Error('hook request without the token stage');
  return state;
}
