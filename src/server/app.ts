/**
 * Builds the HTTP application: Fastify with the JSON error shape of CONTRACT §4
 * everywhere, the hook ingress and the admin API.
 */
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  LogController,
} from 'fastify';
import type { ResolvedConfig } from '../config/resolved.js';
import { HttpError } from '../http/errors.js';
import type { AuthFailureLimiter } from '../ingress/auth-limiter.js';
import { lingeringClose } from '../ingress/body.js';
import { rejectQueryToken } from '../ingress/guards.js';
import { type HookIngress, type IngressDeps, registerHookRoutes } from '../ingress/hooks-routes.js';
import type { Logger } from '../log.js';
import { type Store, StoreUnavailableError } from '../store/types.js';
import { registerAdminRoutes } from './admin-routes.js';

export interface AppDeps {
  config: ResolvedConfig;
  store: Store;
  limiter: AuthFailureLimiter;
  log: Logger;
  ingress: HookIngress;
  onCommitted?: IngressDeps['onCommitted'];
  bodyTimeoutMs?: number;
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
  });

  app.setErrorHandler((error: FastifyError | HttpError | Error, request, reply) => {
    const httpError = toHttpError(error);
    if (httpError.statusCode >= 500) request.log.error({ err: error, url: request.url }, 'request failed');
    if (httpError.headers.connection === 'close') lingeringClose(request.raw.socket);
    reply.code(httpError.statusCode).headers(httpError.headers).send(httpError.toJSON());
  });

  app.setNotFoundHandler((request, reply) => {
    const inHooks = config.hooks.enabled && request.url.startsWith(`${config.hooks.path}/`);
    // Methods without a hook route land here: the query-token check still comes first (CONTRACT §4).
    if (inHooks) rejectQueryToken(request);
    const error = inHooks
      ? new HttpError(405, 'method_not_allowed', `${request.method} is not allowed; use POST`, {
          allow: 'POST',
        })
      : new HttpError(404, 'not_found', `nothing at ${request.method} ${request.url.split('?')[0]}`);
    reply.code(error.statusCode).headers(error.headers).send(error.toJSON());
  });

  if (config.hooks.enabled) registerHookRoutes(app, deps);
  registerAdminRoutes(app, deps);
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
  if (status === 405) return new HttpError(405, 'method_not_allowed', error.message);
  if (status !== undefined && status >= 400 && status < 500) {
    return new HttpError(status, status === 404 ? 'not_found' : 'invalid_payload', error.message);
  }
  return new HttpError(500, 'internal_error', 'internal error');
}
