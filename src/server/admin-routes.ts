/**
 * The operators' API (docs/operating.md, "Admin API"): health and readiness, runs (list,
 * retry, redeliver), deliveries, session events, usage (docs/usage.md), the OpenAPI document. Every
 * /api route takes only `Authorization: Bearer <gateway.auth.token>`; failures
 * count toward the same per-address lockout as the hooks.
 */

import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { type ZodType, z } from 'zod';
import type { BudgetBook } from '../budgets/book.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { isImageType, isTextType } from '../hook-model/attachments.js';
import { echoed, HttpError, invalidPayload } from '../http/errors.js';
import type { Attachment, Store } from '../store/types.js';
import {
  ADMIN_SECURITY,
  ErrorAnswer,
  EventsAnswer,
  HeartbeatsAnswer,
  limitParam,
  OkAnswer,
  RunDetail,
  TranscriptAnswer,
} from './admin-schemas.js';
import { registerBudgetRoutes } from './budget-routes.js';
import type { CommitCheck } from './commit-check.js';
import { registerReadiness } from './readiness.js';
import { registerRunAdminRoutes } from './run-admin-routes.js';
import { registerRunStepsRoutes } from './run-steps-routes.js';
import { registerUsageRoutes } from './usage-routes.js';
import { zodValidatorCompiler } from './validation.js';

export const DEFAULT_EVENT_LIMIT = 1000;
const DEFAULT_TRANSCRIPT_LIMIT = 100;
const DEFAULT_HEARTBEAT_LIMIT = 50;
const MAX_EVENT_LIMIT = 10_000;

export interface AdminDeps {
  config: ResolvedConfig;
  store: Store;
  /** Whether the gateway's parts (workers included) are all running, for /readyz. */
  isRunning?: () => boolean;
  /** Whether the store can commit, for /readyz (told of failed writes by the error handler). */
  commits?: CommitCheck;
  /** The budgets (docs/budgets.md); absent with none configured. */
  budgets?: Pick<BudgetBook, 'refresh' | 'states'>;
}

export function registerAdminRoutes(app: FastifyInstance, deps: AdminDeps): void {
  const { store } = deps;

  app.register(async (scope) => {
    scope.setValidatorCompiler(zodValidatorCompiler);
    // Answer schemas document the routes (openapi.ts); answers are serialised as they are.
    scope.setSerializerCompiler(serializeAsIs);
    scope
      .withTypeProvider<ZodTypeProvider>()
      .get(
        '/healthz',
        { schema: { summary: 'Liveness', tags: ['health'], response: { 200: OkAnswer } } },
        async () => ({ ok: true as const }),
      );
    registerReadiness(scope, { store, isRunning: deps.isRunning, commits: deps.commits });
  });

  app.register(async (scope) => {
    scope.setValidatorCompiler(zodValidatorCompiler);
    scope.setSerializerCompiler(serializeAsIs);
    const api = scope.withTypeProvider<ZodTypeProvider>();
    api.addHook(
      'onRequest',
      scope.requireToken({ token: 'gateway', disabled: 'the admin API is disabled: set gateway.auth.token' }),
    );

    api.get('/api/openapi.json', { schema: { hide: true } }, async () => scope.openApiDocument());

    registerRunAdminRoutes(scope, { store });
    registerRunStepsRoutes(scope, { store });
    registerUsageRoutes(scope, { store });
    registerBudgetRoutes(scope, { budgets: deps.budgets });

    registerRunReadRoutes(scope, store);
    registerSessionRoutes(scope, store);
  });
}

/** One run, and one of its files. */
function registerRunReadRoutes(scope: FastifyInstance, store: AdminDeps['store']): void {
  const api = scope.withTypeProvider<ZodTypeProvider>();
  const runSchema = {
    summary: 'One run',
    tags: ['runs'],
    security: ADMIN_SECURITY,
    params: RunParams,
    response: { 200: RunDetail, 401: ErrorAnswer, 404: ErrorAnswer },
  };
  api.get('/api/runs/:runId', { schema: runSchema }, async (request) => {
    const { runId } = request.params;
    const [run, stored] = await Promise.all([store.getRun(runId), store.admin.getStoredRun(runId)]);
    if (!run || !stored) throw new HttpError('not_found', `no run with id "${echoed(runId)}"`);
    // The operator's view adds what the run was given (the list's fields and the
    // message as received); a caller holding only the hook token gets the RunView alone
    // (docs/callers.md, "Following a run").
    const { source, name, retryOf, message } = stored.run;
    return { ...run, source, name, retryOf: retryOf ?? null, message };
  });

  api.get(
    '/api/runs/:runId/attachments/:index',
    {
      schema: {
        summary: 'One of a run’s files, as it was sent',
        description:
          'The bytes of `attachments[index]` of the RunView (from 0), with its media type. Images are ' +
          'served inline, everything else as a download (`Content-Disposition: attachment`); always ' +
          '`X-Content-Type-Options: nosniff` and a sandboxing Content-Security-Policy.',
        tags: ['runs'],
        security: ADMIN_SECURITY,
        params: AttachmentParams,
        response: {
          200: z.string().describe('The file’s bytes (binary), its media type as the Content-Type.'),
          400: ErrorAnswer,
          401: ErrorAnswer,
          404: ErrorAnswer,
        },
      },
    },
    async (request, reply) => {
      const { runId, index } = request.params;
      const file = await store.admin.getAttachment(runId, index);
      if (!file) throw new HttpError('not_found', `run "${echoed(runId)}" has no attachment ${index}`);
      // Raw bytes: Fastify sends a Buffer as it is (the answer schemas describe the JSON errors only).
      return reply.headers(attachmentHeaders(file)).send(file.data as never);
    },
  );
}

/** A session's events, transcript and heartbeats. */
function registerSessionRoutes(scope: FastifyInstance, store: AdminDeps['store']): void {
  const api = scope.withTypeProvider<ZodTypeProvider>();
  api.get(
    '/api/sessions/:sessionKey/events',
    {
      schema: {
        ...sessionDoc('A session’s system events, oldest first', EventsAnswer),
        params: SessionParams,
        querystring: EventsQuery,
      },
    },
    async (request) => {
      const { sessionKey } = request.params;
      const { limit, after } = request.query;
      const events = await store.listEvents(sessionKey, { limit, after });
      if (events === undefined)
        throw invalidPayload('after', `no event "${after}" in session "${sessionKey}"`);
      return { events };
    },
  );

  api.get(
    '/api/sessions/:sessionKey/transcript',
    {
      schema: {
        ...sessionDoc('A session’s newest transcript turns, oldest first', TranscriptAnswer),
        params: SessionParams,
        querystring: TranscriptQuery,
      },
    },
    async (request) => ({
      messages: await store.sessions.loadTranscript(request.params.sessionKey, request.query.limit),
    }),
  );

  api.get(
    '/api/sessions/:sessionKey/heartbeats',
    {
      schema: {
        ...sessionDoc('A main session’s newest heartbeats', HeartbeatsAnswer),
        params: SessionParams,
        querystring: HeartbeatsQuery,
      },
    },
    async (request) => ({
      heartbeats: await store.sessions.listHeartbeats(request.params.sessionKey, request.query.limit),
    }),
  );
}

const RunParams = z.object({ runId: z.string() });
const AttachmentParams = z.object({
  runId: z.string(),
  index: z.coerce
    .number({ error: 'must be a number from 0' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(1000, 'must be at most 1000'),
});

/**
 * How a stored file is served: only the four image types inline (never SVG, which is not
 * accepted, nor HTML); everything else as a download. `nosniff` keeps the browser to the
 * stated type, and the sandboxing CSP keeps even an opened download from running anything.
 */
function attachmentHeaders(file: Attachment): Record<string, string> {
  const inline = isImageType(file.mediaType);
  const textual = isTextType(file.mediaType);
  return {
    'content-type': textual ? `${file.mediaType}; charset=utf-8` : file.mediaType,
    'content-disposition': `${inline ? 'inline' : 'attachment'}; ${dispositionName(file.name)}`,
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'cache-control': 'private, no-store',
  };
}

/** `filename="<ASCII fallback>"; filename*=UTF-8''<name>` (RFC 6266). */
function dispositionName(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** OpenAPI fields of the session routes. */
const sessionDoc = <T extends ZodType>(summary: string, answer: T) => ({
  summary,
  tags: ['sessions'],
  security: ADMIN_SECURITY,
  response: { 200: answer, 400: ErrorAnswer, 401: ErrorAnswer },
});

/** Answers are sent as the handlers return them; the answer schemas only document them. */
const serializeAsIs = () => (data: unknown) => JSON.stringify(data);
const SessionParams = z.object({ sessionKey: z.string() });
const EventsQuery = z.object({
  limit: limitParam(DEFAULT_EVENT_LIMIT, MAX_EVENT_LIMIT),
  after: z.string({ error: 'must be one event id' }).optional(),
});
const TranscriptQuery = z.object({ limit: limitParam(DEFAULT_TRANSCRIPT_LIMIT, MAX_EVENT_LIMIT) });
const HeartbeatsQuery = z.object({ limit: limitParam(DEFAULT_HEARTBEAT_LIMIT, MAX_EVENT_LIMIT) });
