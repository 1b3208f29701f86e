/**
 * `GET /metrics` (docs/operating.md, "Metrics"): the Prometheus text exposition, under the admin
 * token like /api — the same guard (auth/plugin.ts), so failures count toward the same lockout.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayMetrics } from './gateway-metrics.js';

export interface MetricsRouteDeps {
  metrics: GatewayMetrics;
}

export function registerMetricsRoute(app: FastifyInstance, deps: MetricsRouteDeps): void {
  const { metrics } = deps;
  app.get('/metrics', {
    onRequest: app.requireToken<FastifyRequest>({
      token: 'gateway',
      disabled: 'the metrics endpoint is disabled: set gateway.auth.token',
    }),
    handler: async (_request, reply) => {
      const body = await metrics.exposition();
      return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(body);
    },
  });
}
