/**
 * The hook ingress as Fastify routes: the door's stages, chained in the order of
 * docs/errors.md (and docs/endpoints.md), each in a file of its own over the one state a
 * request carries (hook-request.ts):
 *
 * 1. before the route: an over-long path segment (414, http/path-length.ts);
 * 2. token (stage-token.ts, after auth/guards.ts): query token 400 → method 405 →
 *    lockout 429 → token 401 → scope and sources 403 → hook name 404 → hook rate 429;
 * 3. body (stage-body.ts): 413 over the limit, 408 past the deadline;
 * 4. target (stage-target.ts): 400 `invalid_json` → mapping by payload 404 → scope 403 → 413;
 * 5. actions (stage-actions.ts): `invalid_payload`, the policy's 400s, a signature's 401,
 *    a transform's 500 `mapping_failed`;
 * 6. budget (stage-budget.ts): 429 `budget_exceeded` in a scope whose budget is spent;
 * 7. commit (stage-commit.ts): idempotency key 400, stream caps 429/503, the durable commit
 *    (503 when the store cannot take it), 409 for a reused key;
 * 8. answer (stage-answer.ts): a stream, a wait for the runs, or the accept answer.
 *
 * A good request allocates its state once, in the token stage; the stages are plain
 * functions, and the handler awaits only where the work is asynchronous (a mapping's
 * build, the commit, a stream's or a wait's reads).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import type { BudgetBook } from '../budgets/book.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { type Built, FILTERED } from '../hook-model/targets.js';
import { refuseOverlongSegment } from '../http/path-length.js';
import type { Logger } from '../log.js';
import { SignatureRejected } from '../mappings/mapped-target.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { AcceptResult, Store } from '../store/types.js';
import { DeltaHub } from '../streaming/run-deltas.js';
import { BODY_TIMEOUT_MS } from './body.js';
import type { HookIngress } from './hook-ingress.js';
import { answerCounters, hookSpans } from './hook-observers.js';
import { type DoorRequest, type HookDoor, type HookRoute, hookStateOf } from './hook-request.js';
import { RunCompletions } from './run-completions.js';
import { registerRunStatusRoute } from './run-status-route.js';
import { actionsBuilt, answerFiltered, buildActions, refuseSignature } from './stage-actions.js';
import { sendAnswer, streamedRunId, streamOptions, waitForRuns, waitsForCompletion } from './stage-answer.js';
import { malformedContentTypeIsAbsent, readHookBody } from './stage-body.js';
import { refuseOverBudget } from './stage-budget.js';
import { commitActions, prepareCommit, recordCommit } from './stage-commit.js';
import { takeTarget } from './stage-target.js';
import { openHookRequest, signedSender } from './stage-token.js';
import { STREAM_KEEP_ALIVE_MS, streamAnswer } from './stream-answer.js';
import { StreamSlots } from './stream-slots.js';

export { HookIngress } from './hook-ingress.js';

export interface IngressDeps {
  config: ResolvedConfig;
  store: Store;
  limiter: AuthLimiter;
  log: Logger;
  ingress: HookIngress;
  now?: () => number;
  /**
   * Deadline for receiving a body: 30 s (docs/errors.md);
   * shorter only in tests.
   */
  bodyTimeoutMs?: number;
  /** Where every hook answer is counted (docs/operating.md, "Metrics"); absent in tests that do not look. */
  metrics?: GatewayMetrics;
  /** Finished runs, told by the worker, for `waitForCompletion` (else the waits poll the store only). */
  completions?: RunCompletions;
  /** A SERVER span per hook request when tracing is on (docs/tracing.md); absent: no tracing work. */
  tracing?: Tracing;
  /**
   * Streamed runs' reply pieces (docs/callers.md, "Streamed answers"), from this process's
   * worker and the other replicas'; absent: a hub of its own (streams get no deltas live).
   */
  deltas?: DeltaHub;
  /** Keep-alive comments of a streamed answer: 10 s; shorter only in tests. */
  streamKeepAliveMs?: number;
  /** The open streams, counted against `hooks.streams` (absent: a count of its own). */
  streamSlots?: StreamSlots;
  /** The budgets (docs/budgets.md); absent with none configured. */
  budgets?: Pick<BudgetBook, 'refusal'>;
}

/** The hook routes' handler: the stages after the token's, once the body is read. */
async function handleHook(door: HookDoor, request: DoorRequest, reply: FastifyReply) {
  const state = hookStateOf(request);
  takeTarget(state, request.body);
  let built: Built;
  try {
    built = await buildActions(state, request, door.now());
  } catch (error) {
    throw error instanceof SignatureRejected ? await refuseSignature(door, request, error) : error;
  }
  if (built === FILTERED) return answerFiltered(door, state, request, reply);
  const actions = built;
  actionsBuilt(door, state, request, actions);
  if (actions.length === 0) return reply.code(204).send();
  refuseOverBudget(door, state, door.now());

  prepareCommit(door, state, request, reply);
  let result: AcceptResult;
  try {
    result = await commitActions(door, state);
  } catch (error) {
    state.subscription?.close();
    throw error;
  }
  const accepted = recordCommit(door, state, request, reply, result);
  const fresh = accepted.kind === 'committed';

  if (state.streamed) {
    const runId = streamedRunId(accepted.answer);
    if (runId !== undefined) {
      // A replay's run is read first: a store that cannot answer is the usual 503.
      const known = fresh ? undefined : await door.store.getRun(runId);
      return streamAnswer(reply, streamOptions(door, state, runId, fresh, known));
    }
    state.subscription?.close();
  }
  const answer = waitsForCompletion(actions)
    ? await waitForRuns(door, state, reply, accepted.answer, fresh)
    : accepted.answer;
  return sendAnswer(reply, answer);
}

/** What every hook request uses, resolved once from the gateway's parts. */
function openDoor(deps: IngressDeps): HookDoor {
  const { store, log } = deps;
  return {
    store,
    limiter: deps.limiter,
    log,
    ingress: deps.ingress,
    now: deps.now ?? Date.now,
    hooksPath: deps.config.hooks.path,
    bodyTimeoutMs: deps.bodyTimeoutMs ?? BODY_TIMEOUT_MS,
    metrics: deps.metrics,
    tracing: deps.tracing,
    completions: deps.completions ?? new RunCompletions(store),
    deltas: deps.deltas ?? new DeltaHub({ replica: 'local', log }),
    streamSlots: deps.streamSlots ?? new StreamSlots(),
    streamKeepAliveMs: deps.streamKeepAliveMs ?? STREAM_KEEP_ALIVE_MS,
    readRun: (runId) => store.getRun(runId),
    budgets: deps.budgets,
  };
}

export function registerHookRoutes(app: FastifyInstance, deps: IngressDeps): void {
  const door = openDoor(deps);
  // A stopping gateway answers its waiting requests at once (202), so they do not hold the close.
  app.addHook('preClose', (done) => {
    door.completions.close();
    done();
  });
  app.register(async (scope) =>
    registerRunStatusRoute(scope, {
      store: door.store,
      hooksPath: door.hooksPath,
      limiter: door.limiter,
      fromAllowedSource: () => door.ingress.state.fromAllowedSource,
      tracing: door.tracing,
    }),
  );
  app.register(async (scope) => registerDoor(scope, door));
}

/** The hook routes' scope: the bare hooks path and every hook name below it. */
function registerDoor(scope: FastifyInstance, door: HookDoor): void {
  const guard = scope.requireToken<DoorRequest, 'hook'>({
    token: 'hook',
    method: 'POST',
    withoutToken: (request) => signedSender(door, request as DoorRequest),
    onAuthenticated: (request, address, token) => openHookRequest(door, request, address, token),
  });
  scope.decorateRequest('hookState', null);
  // Parse every body ourselves, whatever its Content-Type (docs/endpoints.md).
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', (request, payload, done) => readHookBody(door, request, payload, done));
  // With tracing on, the span opens before the guard, so rejections are traced too, and
  // closes after the answer is counted.
  const spans = hookSpans(scope, door);
  const counters = door.metrics ? answerCounters(door.metrics, door.ingress) : undefined;
  const onResponse = [...(counters ? [counters.onResponse] : []), ...(spans ? [spans.onResponse] : [])];
  const onError = [...(counters ? [counters.onError] : []), ...(spans ? [spans.onError] : [])];
  const handler = (request: DoorRequest, reply: FastifyReply) => handleHook(door, request, reply);
  for (const url of [door.hooksPath, `${door.hooksPath}/*`]) {
    scope.route<HookRoute>({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      url,
      // An over-long segment first: before the token and the name (docs/errors.md).
      onRequest: spans
        ? [spans.onRequest, refuseOverlongSegment, guard, malformedContentTypeIsAbsent]
        : [refuseOverlongSegment, guard, malformedContentTypeIsAbsent],
      ...(onResponse.length > 0 ? { onResponse, onError } : {}),
      ...(spans ? { onRequestAbort: spans.onRequestAbort } : {}),
      handler,
    });
  }
}
