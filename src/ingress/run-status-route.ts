/**
 * `GET {hooks.path}/runs/{runId}` (docs/callers.md, "Following a run"): a run's
 * RunView for a caller that holds only the hook token, so it can follow what it
 * started.
 *
 * The same checks as every hook path, in the same order — token in the
 * query → method (GET only here) → lockout → token → the token's scope (it must
 * open `runs`) and sources (docs/senders.md) — and a failed token counts
 * toward the lockout. The name `runs` is reserved: no mapping may take it
 * (config/semantics.ts). Routed before `{hooks.path}/*`, being more specific.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import type { SourcesMatcher } from '../auth/hook-tokens.js';
import { refuseOutsideScope, refuseOutsideSources } from '../auth/sender-rules.js';
import { RUNS_HOOK_NAME } from '../config/semantics.js';
import { echoed, HttpError } from '../http/errors.js';
import { requestSpanHooks } from '../observability/request-spans.js';
import type { Tracing } from '../observability/tracing.js';
import type { Store } from '../store/types.js';

export interface RunStatusDeps {
  store: Pick<Store, 'getRun'>;
  hooksPath: string;
  limiter: Pick<AuthLimiter, 'succeed'>;
  /** `hooks.allowedSources` as the current config says (a reload changes it). */
  fromAllowedSource: () => SourcesMatcher | undefined;
  /** A SERVER span per request when tracing is on (docs/tracing.md). */
  tracing?: Tracing;
}

interface RunStatusRoute {
  Params: { runId: string };
}

export function registerRunStatusRoute(app: FastifyInstance, deps: RunStatusDeps): void {
  const { store } = deps;
  // Before any body is read: a refused request costs nothing more.
  const guard = app.requireToken<FastifyRequest<RunStatusRoute>, 'hook'>({
    token: 'hook',
    method: 'GET',
    onAuthenticated: (_request, address, token) => {
      refuseOutsideScope(token, RUNS_HOOK_NAME, [RUNS_HOOK_NAME]);
      refuseOutsideSources(token, deps.fromAllowedSource(), address);
      deps.limiter.succeed(address);
    },
  });
  const url = `${deps.hooksPath}/${RUNS_HOOK_NAME}/:runId`;
  const spans =
    deps.tracing &&
    requestSpanHooks<FastifyRequest<RunStatusRoute>>(
      app,
      deps.tracing,
      () => `${deps.hooksPath}/${RUNS_HOOK_NAME}/{runId}`,
      (request, span) => {
        span.setAttribute('agentgate.hook', RUNS_HOOK_NAME);
        span.setAttribute('agentgate.run_id', request.params.runId);
      },
    );
  app.route<RunStatusRoute>({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url,
    onRequest: spans ? [spans.onRequest, guard] : guard,
    ...(spans
      ? { onResponse: spans.onResponse, onError: spans.onError, onRequestAbort: spans.onRequestAbort }
      : {}),
    handler: async (request, reply) => {
      const { runId } = request.params;
      const view = await store.getRun(runId);
      if (view === undefined) throw new HttpError('not_found', `no run with id "${echoed(runId)}"`);
      return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(view));
    },
  });
}
