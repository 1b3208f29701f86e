/**
 * `GET /metrics` (docs/operating.md, "Metrics"): the Prometheus text exposition, under the admin
 * token like /api — same guard, so failures count toward the same lockout.
 */
import type { FastifyInstance } from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import { guardHook, tokenGuard } from '../auth/guards.js';
import { presentedBearerToken, tokenMatcher } from '../auth/token.js';
import type { ResolvedConfig } from '../config/resolved.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from './gateway-metrics.js';

export interface MetricsRouteDeps {
  config: ResolvedConfig;
  limiter: AuthLimiter;
  metrics: GatewayMetrics;
  log?: Logger;
}

export function registerMetricsRoute(app: FastifyInstance, deps: MetricsRouteDeps): void {
  const { limiter, metrics } = deps;
  const adminToken = deps.config.gateway.auth.token;
  const tokenIsValid = adminToken ? tokenMatcher(adminToken) : undefined;
  const authenticated = tokenGuard({
    limiter,
    log: deps.log,
    credential: presentedBearerToken,
    matcher: () => tokenIsValid,
    unauthorized: 'missing or invalid gateway token',
    disabled: 'the metrics endpoint is disabled: set gateway.auth.token',
  });

  app.get('/metrics', {
    onRequest: guardHook(authenticated, (_request, address) => limiter.succeed(address)),
    handler: async (_request, reply) => {
      const body = await metrics.exposition();
      return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(body);
    },
  });
}
