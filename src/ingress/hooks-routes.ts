/**
 * The hook ingress as Fastify routes. Checks run in the order of docs/errors.md: query token → method → lockout →
 * token → hook name (all before the body is read), then body limit/deadline →
 * JSON → (mapping choice by payload, sender signature) → payload → policy →
 * idempotency → durable commit → answer.
 *
 * The hooks configuration (token, mappings, presets, policies) lives in one
 * state object that a config reload swaps whole; `hooks.path` and
 * `hooks.enabled` take effect on restart.
 */
import type { Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import { clientAddress, type IdentityMatcher, refuseAuthFailure } from '../auth/guards.js';
import { type HookToken, HookTokenTable, type SourcesMatcher } from '../auth/hook-tokens.js';
import { refuseOutsideScope, refuseOutsideSources } from '../auth/sender-rules.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { renderAnswer } from '../hook-model/actions.js';
import { parseJsonObject } from '../hook-model/payload.js';
import { HookPolicy } from '../hook-model/policy.js';
import type { HookTarget } from '../hook-model/targets.js';
import { echoed, HttpError } from '../http/errors.js';
import { refuseOverlongSegment } from '../http/path-length.js';
import type { Logger } from '../log.js';
import { SignatureRejected } from '../mappings/mapped-target.js';
import { HookRouter } from '../mappings/router.js';
import type { TransformLimits } from '../mappings/transforms.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { requestSpanHooks } from '../observability/request-spans.js';
import { type Tracing, traceparentOf } from '../observability/tracing.js';
import type { Action, Committed, NewRun, RunView, Store, StoredAnswer } from '../store/types.js';
import { DeltaHub, type DeltaSubscription } from '../streaming/run-deltas.js';
import { sourcesMatcher } from '../util/cidr.js';
import { logAccepted } from './accepted-log.js';
import { BODY_TIMEOUT_MS, payloadTooLarge, readBody } from './body.js';
import { HookRateLimiter, takeHookRate } from './hook-rate.js';
import { idempotencyClaim } from './idempotency.js';
import { RunCompletions } from './run-completions.js';
import { registerRunStatusRoute } from './run-status-route.js';
import { STREAM_KEEP_ALIVE_MS, streamAnswer, wantsEventStream } from './stream-answer.js';
import { StreamSlots } from './stream-slots.js';
import { runIdsOf, waitAnswer } from './wait-answer.js';

export interface IngressDeps {
  config: ResolvedConfig;
  store: Store;
  limiter: AuthLimiter;
  log: Logger;
  ingress: HookIngress;
  /** Told about every commit, after it is durable (wakes the workers). */
  onCommitted?: (actions: readonly Action[], committed: readonly Committed[]) => void;
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
}

interface IngressState {
  config: ResolvedConfig;
  /** The hook tokens (docs/senders.md); undefined when none is configured (every request 401). */
  matchToken: IdentityMatcher<HookToken> | undefined;
  /** `hooks.allowedSources`: where every hook request must come from; undefined for anywhere. */
  fromAllowedSource: SourcesMatcher | undefined;
  policy: HookPolicy;
  router: HookRouter;
}

/** The live hooks configuration; `reload` swaps it only when the new one is fully built. */
export class HookIngress {
  /** Per-hook request rates (docs/callers.md); kept across reloads, so a reload grants no fresh minute. */
  readonly rates = new HookRateLimiter();

  private constructor(
    private current: IngressState,
    private readonly transformLimits: Partial<TransformLimits>,
  ) {}

  static async create(
    config: ResolvedConfig,
    log: Logger,
    transformLimits: Partial<TransformLimits> = {},
  ): Promise<HookIngress> {
    return new HookIngress(await HookIngress.build(config, log, transformLimits), transformLimits);
  }

  private static async build(
    config: ResolvedConfig,
    log: Logger,
    transformLimits: Partial<TransformLimits>,
  ): Promise<IngressState> {
    const tokens = new HookTokenTable(config.hooks.tokens, sourcesMatcher);
    const everyToken = config.hooks.allowedSources;
    return {
      config,
      matchToken: tokens.empty ? undefined : (presented) => tokens.match(presented),
      fromAllowedSource: everyToken === undefined ? undefined : sourcesMatcher(everyToken),
      policy: new HookPolicy(config),
      router: await HookRouter.create(config, log, transformLimits),
    };
  }

  get state(): IngressState {
    return this.current;
  }

  /**
   * The `maxConcurrentRuns` of the hook a run source names (`hook:<name>`;
   * docs/callers.md) — the strictest of the hook's candidate targets — for the
   * worker's claims; undefined for no cap.
   */
  runCap(source: string): number | undefined {
    if (!source.startsWith('hook:')) return undefined;
    let cap: number | undefined;
    for (const target of this.current.router.candidates(source.slice('hook:'.length))) {
      const max = target.maxConcurrentRuns;
      if (max !== undefined && (cap === undefined || max < cap)) cap = max;
    }
    return cap;
  }

  async reload(config: ResolvedConfig, log: Logger): Promise<void> {
    const previous = this.current;
    this.current = await HookIngress.build(config, log, this.transformLimits);
    // Not awaited: the old transforms' workers end as their last calls finish.
    void previous.router.retire();
  }

  /** Ends the transform workers (gateway stop). */
  close(): Promise<void> {
    return this.current.router.terminate();
  }
}

interface Pending {
  state: IngressState;
  /** The hook token that opened this request. */
  token: HookToken;
  name: string;
  candidates: HookTarget[];
  /** The candidate that took the payload, once chosen (the metrics' `hook` label). */
  target?: HookTarget;
}

/** The metrics' `hook` label of a path that names no hook. */
const UNKNOWN_HOOK = 'unknown';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * What the hook guard found (state, hook name, candidate mappings), for the
     * body parser and the handler. Decorated null in the hook routes' scope
     * only, so every request object keeps one shape (Fastify 5 wants null and
     * assignment, not a shared object as the default).
     */
    hookPending: Pending | null;
    /** The id of the hook token that matched, set first thing after the token check (metrics). */
    hookTokenId: string | null;
  }
}

/**
 * The hook routes' request types, declared without a schema: a schema would add
 * a validation step per request on the hot path, and the body is parsed here on
 * purpose (any Content-Type, in the order of docs/errors.md). `*` is absent on the
 * bare hooks path.
 */
interface HookRoute {
  Params: { '*'?: string };
  Querystring: Record<string, unknown>;
}

export function registerHookRoutes(app: FastifyInstance, deps: IngressDeps): void {
  const { store, limiter, log, ingress, tracing } = deps;
  const now = deps.now ?? Date.now;
  const hooksPath = deps.config.hooks.path;
  const bodyTimeoutMs = deps.bodyTimeoutMs ?? BODY_TIMEOUT_MS;

  /**
   * Once a hook token matched, before the body: what the token may open and from where
   * (docs/senders.md), the hook's name, its candidates and its rate.
   */
  const afterToken = (request: FastifyRequest<HookRoute>, address: string, token: HookToken): void => {
    request.hookTokenId = token.id;
    const state = ingress.state;
    const name = request.params['*'] ?? '';
    const candidates = state.router.candidates(name);
    if (token.hooks !== undefined) {
      refuseOutsideScope(
        token,
        name,
        candidates.map((target) => target.name),
      );
    }
    refuseOutsideSources(token, state.fromAllowedSource, address);
    // With a signature still to check, authentication is not complete yet.
    if (!candidates.some((target) => target.verifies)) limiter.succeed(address);
    if (candidates.length === 0) throw new HttpError('not_found', `no hook named "${echoed(name)}"`);
    // After the name, before the body (docs/callers.md, "Per-hook limits"): a refused request
    // stores nothing.
    takeHookRate(ingress.rates, name, candidates, now());
    request.hookPending = { state, token, name, candidates };
  };

  const handle = async (request: FastifyRequest<HookRoute>, reply: FastifyReply) => {
    const { state, token, name, candidates } = request.hookPending as Pending;
    const body = request.body as Buffer | undefined;
    const payload = parseJsonObject(body);
    const target = candidates.find((candidate) => candidate.accepts?.(payload) ?? true);
    if (!target) throw new HttpError('not_found', `no mapping of "${echoed(name)}" matches this payload`);
    (request.hookPending as Pending).target = target;
    // Mappings that share a path are told apart by the payload: the one it chose must be in scope too.
    if (token.hooks !== undefined) refuseOutsideScope(token, name, [target.name]);
    if ((body as Buffer).length > target.maxBodyBytes) throw payloadTooLarge(target.maxBodyBytes);

    const at = now();
    const ctx = {
      policy: state.policy,
      defaultTimeoutSeconds: state.config.agents.defaults.timeoutSeconds,
      now: at,
      source: target.source,
      tokenId: token.id,
      attachmentMaxBytes: state.config.hooks.attachments?.maxBytes,
    };
    let actions: Action[];
    try {
      actions = await target.build(
        {
          payload,
          body: body as Buffer,
          headers: request.headers,
          query: request.query,
          name,
          url: request.url,
        },
        ctx,
      );
    } catch (error) {
      if (error instanceof SignatureRejected)
        await refuseAuthFailure(limiter, clientAddress(request), error, log);
      throw error;
    }
    if (target.verifies) limiter.succeed(clientAddress(request));
    if (actions.length === 0) return reply.code(204).send();

    // The hook span's own context goes with what is committed, for the worker to continue
    // the trace (docs/tracing.md); null without tracing.
    const span = tracing ? request.traceSpan : null;
    if (span) stampTrace(actions, traceparentOf(span.spanContext()));
    const claim = idempotencyClaim(request.headers, `${hooksPath}/${name}`, body as Buffer, at);
    // A streamed answer (docs/callers.md): its run streams, and its pieces are followed from
    // before the commit, so none is missed.
    const streamed = wantsEventStream(request.headers.accept) ? soleRun(actions) : undefined;
    let subscription: DeltaSubscription | undefined;
    if (streamed) {
      // Over the caps the answer is an error and nothing is committed (docs/callers.md); a slot
      // taken is held until this response closes, whichever answer it turns out to be.
      const release = streamSlots.take(token.id, state.config.hooks.streams);
      const socket = reply.raw.socket;
      // Gone already (its 'close' has passed): the slot is not held by a connection that left.
      if (socket === null || socket.destroyed) release();
      else reply.raw.once('close', release);
      streamed.stream = true;
      subscription = deltas.subscribe(streamed.id);
    }
    let result: Awaited<ReturnType<Store['accept']>>;
    try {
      result = await store.accept(actions, (committed) => renderAnswer(actions, committed), claim);
    } catch (error) {
      subscription?.close();
      throw error;
    }
    // A replay committed nothing: the run it names is the first request's.
    if (result.kind !== 'committed') subscription?.close();
    if (result.kind === 'conflict') {
      throw new HttpError(
        'idempotency_conflict',
        'this idempotency key was already used with a different body',
      );
    }
    if (result.kind === 'replay') reply.header('idempotent-replayed', 'true');
    else {
      deps.onCommitted?.(actions, result.committed);
      logAccepted(log, request.id, target.name, result.committed, span?.spanContext());
      if (span) spanCommitted(span, result.committed);
    }
    const fresh = result.kind === 'committed';
    const maxWaitSeconds = state.config.hooks.maxWaitSeconds;
    if (streamed) {
      const runIds = runIdsOf(result.answer);
      if (runIds.length === 1) {
        const runId = runIds[0] as string;
        // A replay's run is read first: a store that cannot answer is the usual 503.
        const known = fresh ? undefined : await store.getRun(runId);
        return streamAnswer(reply, {
          runId,
          subscription: fresh ? subscription : undefined,
          completions,
          read: (id) => store.getRun(id),
          deadline: Date.now() + maxWaitSeconds * 1000,
          keepAliveMs: streamKeepAliveMs,
          stallMs: state.config.hooks.streams.stallSeconds * 1000,
          log,
          known,
        });
      }
      subscription?.close();
    }
    const waits = actions.some((action) => action.kind === 'agent' && action.waitForCompletion);
    const answer = waits ? await waitForRuns(reply, result.answer, fresh, maxWaitSeconds) : result.answer;
    return reply
      .code(answer.status)
      .header('content-type', 'application/json; charset=utf-8')
      .send(answer.body);
  };

  const completions = deps.completions ?? new RunCompletions(store);
  const deltas = deps.deltas ?? new DeltaHub({ replica: 'local', log });
  const streamSlots = deps.streamSlots ?? new StreamSlots();
  const streamKeepAliveMs = deps.streamKeepAliveMs ?? STREAM_KEEP_ALIVE_MS;
  // A stopping gateway answers its waiting requests at once (202), so they do not hold the close.
  app.addHook('preClose', (done) => {
    completions.close();
    done();
  });

  /**
   * The answer of a `waitForCompletion` request (docs/callers.md): the runs are
   * committed already; a client that leaves while waiting only ends the wait.
   * A replay of such a request waits for the same runs, so a client that lost
   * its answer re-sends the request with the same Idempotency-Key to get it.
   */
  const waitForRuns = async (
    reply: FastifyReply,
    accepted: StoredAnswer,
    fresh: boolean,
    maxWaitSeconds: number,
  ): Promise<StoredAnswer> => {
    const runIds = runIdsOf(accepted);
    // Gone already (during the commit): its 'close' has passed, so do not wait at all.
    const socket = reply.raw.socket;
    if (runIds.length === 0 || socket === null || socket.destroyed) return accepted;
    const left = new AbortController();
    const leave = () => left.abort();
    reply.raw.once('close', leave);
    try {
      const views = await completions.wait(runIds, Date.now() + maxWaitSeconds * 1000, left.signal);
      return waitAnswer(accepted, views);
    } catch (error) {
      // A replay committed nothing now: the store's failure is the answer (503).
      if (!fresh) throw error;
      // Just committed, so queued as far as this request knows.
      return waitAnswer(
        accepted,
        runIds.map(() => ({ status: 'queued' }) as RunView),
      );
    } finally {
      reply.raw.removeListener('close', leave);
    }
  };

  app.register(async (scope) =>
    registerRunStatusRoute(scope, {
      store,
      hooksPath,
      limiter,
      fromAllowedSource: () => ingress.state.fromAllowedSource,
      tracing,
    }),
  );

  const metrics = deps.metrics;
  /**
   * The hook the path names — its chosen target, else its first candidate — or `unknown`
   * (the `hook` label; docs/operating.md, "Metrics").
   */
  const hookLabel = (request: FastifyRequest<HookRoute>): string => {
    const pending = request.hookPending;
    const target = pending
      ? (pending.target ?? pending.candidates[0])
      : ingress.state.router.candidates(request.params['*'] ?? '')[0];
    return target?.name ?? UNKNOWN_HOOK;
  };
  /** The `token` label: the matched hook token's id, or `none` (docs/operating.md, "Metrics"). */
  const tokenLabel = (request: FastifyRequest<HookRoute>): string => request.hookTokenId ?? 'none';
  // Every answer, rejections included; the time is Fastify's own hrtime span of the reply.
  const countAnswer = (request: FastifyRequest<HookRoute>, reply: FastifyReply, done: () => void) => {
    metrics?.hookAnswered(
      hookLabel(request),
      reply.statusCode,
      reply.elapsedTime / 1000,
      tokenLabel(request),
    );
    done();
  };
  // A connection's last answer (413, 408) is written past Fastify (closing-answer.ts), so
  // onResponse never sees it: it is counted when its error is raised.
  const countClosingAnswer = (
    request: FastifyRequest<HookRoute>,
    reply: FastifyReply,
    error: Error,
    done: () => void,
  ) => {
    if (error instanceof HttpError && error.headers.connection === 'close') {
      metrics?.hookAnswered(
        hookLabel(request),
        error.statusCode,
        reply.elapsedTime / 1000,
        tokenLabel(request),
      );
    }
    done();
  };

  app.register(async (scope) => {
    const guard = scope.requireToken<FastifyRequest<HookRoute>, 'hook'>({
      token: 'hook',
      method: 'POST',
      onAuthenticated: afterToken,
    });
    scope.decorateRequest('hookPending', null);
    scope.decorateRequest('hookTokenId', null);
    // Parse every body ourselves, whatever its Content-Type (docs/endpoints.md).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (request, payload, done) => {
      const { candidates } = request.hookPending as Pending;
      // The mapping is only known once the payload is parsed: read up to the largest limit.
      const limit = Math.max(...candidates.map((target) => target.maxBodyBytes));
      readBody(payload, request.headers['content-length'], limit, bodyTimeoutMs, done);
    });
    // Fastify answers a Content-Type it cannot parse (`a/b c`, `;;;`, empty) with
    // 415 before any parser runs. The body is JSON whatever the header says, so a
    // malformed header counts as absent, for the mapping's transform too.
    // `mediaType` is the parse Fastify does anyway and caches for the request.
    const malformedContentTypeIsAbsent = (
      request: FastifyRequest,
      _reply: FastifyReply,
      done: () => void,
    ) => {
      if (request.mediaType === undefined && request.headers['content-type'] !== undefined) {
        request.headers = { 'content-type': undefined };
      }
      done();
    };
    // With tracing on, the span opens before the guard, so rejections are traced too, and
    // closes after the answer is counted.
    const spans = tracing
      ? requestSpanHooks<FastifyRequest<HookRoute>>(
          scope,
          tracing,
          (request) => (request.params['*'] === undefined ? hooksPath : `${hooksPath}/{name}`),
          (request, span) => span.setAttribute('agentgate.hook', hookLabel(request)),
        )
      : undefined;
    const onResponse = [...(metrics ? [countAnswer] : []), ...(spans ? [spans.onResponse] : [])];
    const onError = [...(metrics ? [countClosingAnswer] : []), ...(spans ? [spans.onError] : [])];
    for (const url of [hooksPath, `${hooksPath}/*`]) {
      scope.route<HookRoute>({
        method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
        url,
        // An over-long segment first: before the token and the name (docs/errors.md).
        onRequest: spans
          ? [spans.onRequest, refuseOverlongSegment, guard, malformedContentTypeIsAbsent]
          : [refuseOverlongSegment, guard, malformedContentTypeIsAbsent],
        ...(onResponse.length > 0 ? { onResponse, onError } : {}),
        ...(spans ? { onRequestAbort: spans.onRequestAbort } : {}),
        handler: handle,
      });
    }
  });
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
  if (runIds.length === 1) span.setAttribute('agentgate.run_id', runIds[0] as string);
  else if (runIds.length > 1) span.setAttribute('agentgate.run_ids', runIds);
  if (eventIds.length === 1) span.setAttribute('agentgate.event_id', eventIds[0] as string);
  else if (eventIds.length > 1) span.setAttribute('agentgate.event_ids', eventIds);
}
