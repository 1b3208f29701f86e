/**
 * `GET /api/usage` (docs/usage.md): the usage and cost of the runs that finished in a window,
 * summed per hook, token, agent or model. Registered by admin-routes.ts inside its
 * authenticated scope, so it takes the admin token only.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { invalidPayload } from '../http/errors.js';
import type { Store } from '../store/types.js';
import { ADMIN_SECURITY, ErrorAnswer } from './admin-schemas.js';
import { pointInTime, UsageAnswer, UsageQuery } from './usage-schemas.js';

export interface UsageRoutesDeps {
  store: Store;
  now?: () => number;
}

/** The window when `since` is not given: the last day. */
export const DEFAULT_USAGE_WINDOW_MS = 24 * 3_600_000;

const USAGE = {
  summary: 'Usage and cost, grouped',
  description:
    'The tokens and cost of the runs that finished in `[since, until)`, summed by hook, token, agent or ' +
    'model, the costliest first. `costUsd` sums the priced runs; null when none was. With `bucket=hour|day`, ' +
    'each group is split by the UTC hour or day its runs finished in, each row with its bucket’s start `at`.',
  tags: ['usage'],
  security: ADMIN_SECURITY,
  querystring: UsageQuery,
  response: { 200: UsageAnswer, 400: ErrorAnswer, 401: ErrorAnswer },
};

export function registerUsageRoutes(app: FastifyInstance, deps: UsageRoutesDeps): void {
  const now = deps.now ?? Date.now;
  app.withTypeProvider<ZodTypeProvider>().get('/api/usage', { schema: USAGE }, async (request) => {
    const at = now();
    const { by, bucket } = request.query;
    const since =
      request.query.since === undefined ? at - DEFAULT_USAGE_WINDOW_MS : pointInTime(request.query.since, at);
    const until = request.query.until === undefined ? at : pointInTime(request.query.until, at);
    // The query's checks let through only times that read (usage-schemas.ts).
    if (since === undefined || until === undefined) throw invalidPayload('since', 'must be a time');
    if (since >= until) throw invalidPayload('until', 'must be later than since');
    return {
      usage: await deps.store.admin.usageSummary({ by, since, until, ...(bucket ? { bucket } : {}) }),
    };
  });
}
