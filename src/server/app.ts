/**
 * Builds the HTTP application: Fastify with the gateway's one JSON error shape
 * everywhere (docs/endpoints.md), the hook ingress and the admin API.
 */
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import { rejectQueryToken } from '../auth/guards.js';
import { tokenAuth } from '../auth/plugin.js';
import { tokenMatcher } from '../auth/token.js';
import type { BudgetBook } from '../budgets/book.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { registerDashboard } from '../dashboard/plugin.js';
import { jsonErrorAnswers } from '../http/error-answers.js';
import { HttpError, nothingAt } from '../http/errors.js';
import { hasOverlongSegment, MAX_PARAM_LENGTH, uriTooLong } from '../http/path-length.js';
import { type HookIngress, type IngressDeps, registerHookRoutes } from '../ingress/hooks-routes.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { registerMetricsRoute } from '../metrics/route.js';
import { type Store, StoreUnavailableError } from '../store/types.js';
import { registerAdminRoutes } from './admin-routes.js';
import { onBadUrl, onClientError, onConnect, onMaxParamLength } from './client-errors.js';
import { CommitCheck } from './commit-check.js';
import { lazyCompilers } from './lazy-compilers.js';
import { registerOpenApi } from './openapi.js';

export interface AppDeps {
  config: ResolvedConfig;
  store: Store;
  limiter: AuthLimiter;
  log: Logger;
  ingress: HookIngress;
  bodyTimeoutMs?: number;
  /** Hook answers are counted and `GET /metrics` is served when given (docs/operating.md, "Metrics"). */
  metrics?: GatewayMetrics;
  /** Runs the worker finished, for `waitForCompletion` answers (docs/callers.md, "Waiting in the answer"). */
  completions?: IngressDeps['completions'];
  /** Whether every part of the gateway runs, for `/readyz`. */
  isRunning?: () => boolean;
  /** Hook requests are traced when given (docs/tracing.md). */
  tracing?: IngressDeps['tracing'];
  /** Streamed runs' reply pieces, for streamed answers (docs/callers.md, "Streamed answers"). */
  deltas?: IngressDeps['deltas'];
  /** Keep-alive comments of a streamed answer (tests make them frequent). */
  streamKeepAliveMs?: number;
  /** The budgets (docs/budgets.md): the door's check, `GET /api/budgets`; absent with none configured. */
  budgets?: BudgetBook;
}

export function buildApp(deps: AppDeps): FastifyInstance {
  const { config, log } = deps;
  const trusted = config.gateway.trustedProxies;
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    // Requests are not logged one by one: at thousands per second that is the bottleneck.
    logController: new LogController({ disableRequestLogging: true }),
    // No per-request child logger: with redaction configured, creating one per
    // request costs more than everything the ingress itself does.
    childLoggerFactory: (logger) => logger,
    trustProxy: trusted.length > 0 ? trusted : false,
    return503OnClosing: true,
    keepAliveTimeout: 72_000,
    // Requests refused before any route answer in the same JSON shape too (docs/endpoints.md;
    // client-errors.ts).
    clientErrorHandler: onClientError,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH, onBadUrl, onMaxParamLength },
    // ajv and fast-json-stringify load when a route first needs them: none does (lazy-compilers.ts).
    schemaController: { compilersFactory: lazyCompilers },
  });

  // Outside the hook routes (which parse every body themselves) no route takes a
  // body: the body of a request to an unknown path is not read, so its answer is
  // 404/405 whatever it holds or claims to be. Node discards it after the answer.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  // Node routes CONNECT past Fastify to this event, and drops it unanswered without a listener.
  app.server.on('connect', onConnect);

  const notFound = (request: FastifyRequest): HttpError => {
    // A path the router found no route for may still hold an over-long segment (docs/errors.md).
    if (hasOverlongSegment(request.url)) return uriTooLong();
    const inHooks = config.hooks.enabled && request.url.startsWith(`${config.hooks.path}/`);
    // Methods without a hook route land here: the query-token check still comes first
    // (docs/errors.md).
    if (inHooks) rejectQueryToken(request);
    return inHooks
      ? new HttpError('method_not_allowed', `${request.method} is not allowed; use POST`, {
          allow: 'POST',
        })
      : nothingAt(request.method, request.url);
  };

  // `/readyz` turns 503 as soon as a write fails, not only at its next probe (docs/operating.md).
  const commits = new CommitCheck((now) => deps.store.admin.probeCommit(now));
  app.register(jsonErrorAnswers, {
    notFound,
    unexpected: (error) =>
      error instanceof StoreUnavailableError
        ? new HttpError('unavailable', 'the store is unavailable; nothing was recorded, retry later', {
            'retry-after': '1',
          })
        : new HttpError('internal_error', 'internal error'),
    observe: (error, answer, request) => {
      if (error instanceof StoreUnavailableError) commits.writeFailed(error);
      if (answer.statusCode >= 500)
        request.log.error({ err: error, reqId: request.id, url: request.url }, 'request failed');
    },
  });

  // Before any route: it collects them as they are added (no per-request work).
  registerOpenApi(app, { hooksEnabled: config.hooks.enabled, hooksPath: config.hooks.path });
  // Before the routes that ask it for their guards (they do so inside their own plugins).
  const adminToken = config.gateway.auth.token;
  const adminTokenIsValid = adminToken ? tokenMatcher(adminToken) : undefined;
  const matchAdmin =
    adminTokenIsValid && ((presented?: string) => (adminTokenIsValid(presented) ? 'gateway' : undefined));
  app.register(tokenAuth, {
    limiter: deps.limiter,
    log,
    matchers: { gateway: () => matchAdmin, hook: () => deps.ingress.state.matchToken },
  });
  if (config.hooks.enabled) registerHookRoutes(app, deps);
  registerAdminRoutes(app, { ...deps, commits });
  registerDashboard(app);
  const { metrics } = deps;
  // In a plugin, so the OpenAPI document (registered before it) sees the route.
  if (metrics) app.register(async (scope) => registerMetricsRoute(scope, { ...deps, metrics }));
  return app;
}
