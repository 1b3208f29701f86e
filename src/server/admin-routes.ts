/**
 * The operators' API (CONTRACT §6): health, runs, session events. Every /api
 * route takes only `Authorization: Bearer <gateway.auth.token>`; failures count
 * toward the same per-address lockout as the hooks.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import { tokenGuard } from '../auth/guards.js';
import { presentedBearerToken, tokenMatcher } from '../auth/token.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { HttpError, invalidPayload } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/types.js';

export const DEFAULT_EVENT_LIMIT = 1000;
const DEFAULT_TRANSCRIPT_LIMIT = 100;
const DEFAULT_HEARTBEAT_LIMIT = 50;
const MAX_EVENT_LIMIT = 10_000;

export interface AdminDeps {
  config: ResolvedConfig;
  store: Store;
  limiter: AuthLimiter;
  /** Where lockouts are reported (optional: tests may leave it out). */
  log?: Logger;
}

export function registerAdminRoutes(app: FastifyInstance, deps: AdminDeps): void {
  const { store, limiter } = deps;
  const adminToken = deps.config.gateway.auth.token;
  const tokenIsValid = adminToken ? tokenMatcher(adminToken) : undefined;

  app.get('/healthz', async (_request, reply) => reply.send({ ok: true }));

  const authenticated = tokenGuard({
    limiter,
    log: deps.log,
    credential: presentedBearerToken,
    matcher: () => tokenIsValid,
    unauthorized: 'missing or invalid gateway token',
    disabled: 'the admin API is disabled: set gateway.auth.token',
  });
  const authenticate = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    limiter.succeed(authenticated(request));
    done();
  };

  app.register(async (api) => {
    api.addHook('onRequest', authenticate);

    api.get('/api/runs/:runId', async (request) => {
      const { runId } = request.params as { runId: string };
      const run = await store.getRun(runId);
      if (!run) throw new HttpError(404, 'not_found', `no run with id "${runId}"`);
      return run;
    });

    api.get('/api/sessions/:sessionKey/events', async (request) => {
      const { sessionKey } = request.params as { sessionKey: string };
      const query = request.query as { limit?: string; after?: string };
      const limit = parseLimit(query.limit);
      const events = await store.listEvents(sessionKey, { limit, after: query.after });
      if (events === undefined)
        throw invalidPayload('after', `no event "${query.after}" in session "${sessionKey}"`);
      return { events };
    });

    api.get('/api/sessions/:sessionKey/transcript', async (request) => {
      const { sessionKey } = request.params as { sessionKey: string };
      const limit = parseLimit((request.query as { limit?: string }).limit, DEFAULT_TRANSCRIPT_LIMIT);
      return { messages: await store.loadTranscript(sessionKey, limit) };
    });

    api.get('/api/sessions/:sessionKey/heartbeats', async (request) => {
      const { sessionKey } = request.params as { sessionKey: string };
      const limit = parseLimit((request.query as { limit?: string }).limit, DEFAULT_HEARTBEAT_LIMIT);
      return { heartbeats: await store.listHeartbeats(sessionKey, limit) };
    });
  });
}

function parseLimit(raw: string | undefined, fallback = DEFAULT_EVENT_LIMIT): number {
  if (raw === undefined) return fallback;
  const limit = Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EVENT_LIMIT) {
    throw invalidPayload('limit', `must be an integer from 1 to ${MAX_EVENT_LIMIT}`);
  }
  return limit;
}
