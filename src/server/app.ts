/**
 * Builds the HTTP application: Fastify with the gateway's one JSON error shape
 * everywhere (docs/endpoints.md), the hook ingress and the admin API.
 */
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import { rejectQueryToken } from '../auth/guards.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { registerDashboard } from '../dashboard/plugin.js';
import { type ErrorCode, HttpError } from '../http/errors.js';
import { type HookIngress, type IngressDeps, registerHookRoutes } from '../ingress/hooks-routes.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { registerMetricsRoute } from '../metrics/route.js';
import { type Store, StoreUnavailableError } from '../store/types.js';
import { registerAdminRoutes } from './admin-routes.js';
import { MAX_PARAM_LENGTH, onBadUrl, onClientError, onConnect, onMaxParamLength } from './client-errors.js';
import { sendClosingAnswer } from './closing-answer.js';
import { CommitCheck } from './commit-check.js';
import { registerOpenApi } from './openapi.js';

export interface AppDeps {
  config: ResolvedConfig;
  store: Store;
  limiter: AuthLimiter;
  log: Logger;
  ingress: HookIngress;
  onCommitted?: IngressDeps['onCommitted'];
  bodyTimeoutMs?: number;
  /** Hook answers are counted and `GET /metrics` is served when given (docs/operating.md, "Metrics"). */
  metrics?: GatewayMetrics;
  /** Runs the worker finished, for `waitForCompletion` answers (docs/callers.md, "Waiting in the answer"). */
  completions?: IngressDeps['completions'];
  /** Wakes the delivery engine (admin redeliver). */
  notifyDelivery?: () => void;
  /** Whether every part of the gateway runs, for `/readyz`. */
  isRunning?: () => boolean;
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
  });

  // Outside the hook routes (which parse every body themselves) no route takes a
  // body: the body of a request to an unknown path is not read, so its answer is
  // 404/405 whatever it holds or claims to be. Node discards it after the answer.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  // Node routes CONNECT past Fastify to this event, and drops it unanswered without a listener.
  app.server.on('connect', onConnect);

  const notFound = (request: FastifyRequest): HttpError => {
    const inHooks = config.hooks.enabled && request.url.startsWith(`${config.hooks.path}/`);
    // Methods without a hook route land here: the query-token check still comes first
    // (docs/errors.md).
    if (inHooks) rejectQueryToken(request);
    return inHooks
      ? new HttpError(405, 'method_not_allowed', `${request.method} is not allowed; use POST`, {
          allow: 'POST',
        })
      : new HttpError(404, 'not_found', `nothing at ${request.method} ${request.url.split('?')[0]}`);
  };

  // `/readyz` turns 503 as soon as a write fails, not only at its next probe (docs/operating.md).
  const commits = new CommitCheck((now) => deps.store.admin.probeCommit(now));
  app.setErrorHandler((error: FastifyError | HttpError | Error, request, reply) => {
    if (error instanceof StoreUnavailableError) commits.writeFailed(error);
    let httpError = toHttpError(error);
    // Fastify refuses a malformed Content-Type (415) before an unknown path's
    // handler runs; the path is what is wrong, so say that instead.
    if (request.is404 && !(error instanceof HttpError)) httpError = answerOf(() => notFound(request));
    if (httpError.statusCode >= 500)
      request.log.error({ err: error, reqId: request.id, url: request.url }, 'request failed');
    if (httpError.headers.connection === 'close') {
      // The connection's last answer, with a lingering close (closing-answer.ts).
      reply.hijack();
      sendClosingAnswer(reply.raw, httpError);
      return;
    }
    reply.code(httpError.statusCode).headers(httpError.headers).send(httpError.toJSON());
  });

  app.setNotFoundHandler((request, reply) => {
    const error = notFound(request);
    reply.code(error.statusCode).headers(error.headers).send(error.toJSON());
  });

  // Before any route: it collects them as they are added (no per-request work).
  registerOpenApi(app, { hooksEnabled: config.hooks.enabled, hooksPath: config.hooks.path });
  if (config.hooks.enabled) registerHookRoutes(app, deps);
  registerAdminRoutes(app, { ...deps, commits });
  registerDashboard(app);
  const { metrics } = deps;
  // In a plugin, so the OpenAPI document (registered before it) sees the route.
  if (metrics) app.register(async (scope) => registerMetricsRoute(scope, { ...deps, metrics }));
  return app;
}

function toHttpError(error: FastifyError | HttpError | Error): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof StoreUnavailableError) {
    return new HttpError(503, 'unavailable', 'the store is unavailable; nothing was recorded, retry later', {
      'retry-after': '1',
    });
  }
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new HttpError(status, FRAMEWORK_CODES[status] ?? 'bad_request', error.message);
  }
  return new HttpError(500, 'internal_error', 'internal error');
}

/** Codes for the 4xx that Fastify itself raises; any other is a `bad_request`. */
const FRAMEWORK_CODES: Record<number, ErrorCode> = {
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  431: 'headers_too_large',
};

/** The error `compute` throws as an answer, or the one it returns. */
function answerOf(compute: () => HttpError): HttpError {
  try {
    return compute();
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
}
