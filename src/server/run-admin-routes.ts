/**
 * The operators' run, delivery and callback routes (docs/operating.md, "Admin API"): the run
 * list, retry (one run or in bulk), redeliver, the delivery list and the (read-only) completion
 * callback list. Registered by admin-routes.ts inside its authenticated scope, so every one
 * takes the admin token only.
 *
 * A retry goes through `store.accept` like a hook's agent request — committed
 * in the same group commit, workers woken (and on PostgreSQL every replica
 * through the accept's NOTIFY) — with the old run's inputs and a new id.
 *
 * A bulk retry (`POST /api/runs/retry`, docs/operating.md "Bulk retry") commits all the
 * retries it makes in one accept: all of them or, when the store fails, none. A run already
 * retried (some run's `retryOf` names it) is not matched, so the same bulk retry sent again
 * retries nothing. Bulk retries are taken one at a time in this process; two sent at the same
 * moment to two PostgreSQL replicas could each retry a run.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { echoed, HttpError, invalidPayload } from '../http/errors.js';
import type { Action, NewRun, Store, StoredRun } from '../store/types.js';
import { uuidv7 } from '../util/ids.js';
import { jsonObjectBody, noBodyIsEmpty } from './admin-json-body.js';
import {
  ADMIN_SECURITY,
  BulkRetryAnswer,
  BulkRetryBody,
  CallbacksAnswer,
  CallbacksQuery,
  DeliveriesAnswer,
  DeliveriesQuery,
  ErrorAnswer,
  OkAnswer,
  RetryAnswer,
  RunPage,
  RunParams,
  RunsQuery,
} from './admin-schemas.js';

export interface RunAdminDeps {
  store: Store;
  now?: () => number;
}

/** What the routes use: the deps with the clock resolved. */
interface RunAdmin extends RunAdminDeps {
  now: () => number;
}

export function registerRunAdminRoutes(app: FastifyInstance, deps: RunAdminDeps): void {
  const admin: RunAdmin = { ...deps, now: deps.now ?? Date.now };
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get('/api/runs', { schema: LIST_RUNS }, (request) => listRuns(admin, request.query));
  api.post('/api/runs/:runId/retry', { schema: RETRY }, (request, reply) =>
    retryOne(admin, request.params.runId, reply),
  );
  app.register(async (scope) => registerBulkRetry(scope, admin));
  api.post('/api/runs/:runId/redeliver', { schema: REDELIVER }, (request, reply) =>
    redeliver(admin, request.params.runId, reply),
  );
  api.get('/api/deliveries', { schema: DELIVERIES }, async (request) => ({
    deliveries: await admin.store.admin.listDeliveries(request.query),
  }));
  // Read only: there is no admin action that sends a callback again; a retry of the run sends
  // its own (docs/operating.md, "Admin API").
  api.get('/api/callbacks', { schema: CALLBACKS }, async (request) => ({
    callbacks: await admin.store.admin.listCallbacks(request.query),
  }));
}

const notFound = (runId: string) => new HttpError('not_found', `no run with id "${echoed(runId)}"`);

/** `GET /api/runs`: a page of runs, newest first. */
async function listRuns(admin: RunAdmin, query: z.output<typeof RunsQuery>) {
  const { status, source, tokenId, limit, before, view } = query;
  const options = { status, source, token: tokenId, limit, before };
  // A table shows one line per run: the summary view reads no whole reply or error
  // (docs/operating.md, "The run list's summary view").
  const page =
    view === 'summary'
      ? await admin.store.admin.listRunSummaries(options)
      : await admin.store.admin.listRuns(options);
  // Decided: an unknown `before` is refused rather than answered with an empty page,
  // which would look like "no older runs" (a mistyped id, or a run pruned meanwhile).
  if (!page) throw invalidPayload('before', `no run with id "${before}"`);
  return page;
}

/** `POST /api/runs/:runId/retry`: one finished run again, as a new run. */
async function retryOne(admin: RunAdmin, runId: string, reply: FastifyReply) {
  const stored = await admin.store.admin.getStoredRun(runId);
  if (!stored) throw notFound(runId);
  if (stored.status === 'queued' || stored.status === 'running' || stored.status === 'waiting') {
    throw new HttpError(
      'run_not_finished',
      `run "${runId}" is ${stored.status}; only a finished run can be retried`,
    );
  }
  const run = retryRun(stored, admin.now());
  const actions: Action[] = [{ kind: 'agent', run }];
  const answer = { ok: true as const, runId: run.id, retryOf: runId };
  await admin.store.accept(actions, () => ({ status: 202, body: JSON.stringify(answer) }));
  return reply.code(202).send(answer);
}

/** A bulk retry's body is a few fields: far below this. */
const BULK_RETRY_BODY_LIMIT = 16 * 1024;

/**
 * `POST /api/runs/retry`, in a scope of its own: the only admin route that reads a body (a
 * JSON object, whatever the Content-Type says; none at all reads as `{}`, so the missing
 * field is named).
 */
function registerBulkRetry(scope: FastifyInstance, admin: RunAdmin): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', jsonObjectBody(BULK_RETRY_BODY_LIMIT));
  const bulk = new BulkRetries(admin);
  scope
    .withTypeProvider<ZodTypeProvider>()
    .post('/api/runs/retry', { schema: BULK_RETRY, preValidation: noBodyIsEmpty }, (request, reply) =>
      bulk.answer(request.body, reply),
    );
}

/** Bulk retries, one at a time: each reads what is not retried yet, then commits its retries. */
class BulkRetries {
  private previous: Promise<unknown> = Promise.resolve();

  constructor(private readonly admin: RunAdmin) {}

  async answer(body: z.output<typeof BulkRetryBody>, reply: FastifyReply) {
    const turn = this.previous.then(() => this.retry(body));
    this.previous = turn.catch(() => {});
    const { matched, retries } = await turn;
    const retried = retries.map((run) => ({ runId: run.id, retryOf: run.retryOf }));
    return reply.code(body.dryRun ? 200 : 202).send({ ok: true as const, matched, retried });
  }

  private async retry(body: z.output<typeof BulkRetryBody>): Promise<{ matched: number; retries: Retry[] }> {
    const { status, source, since, until, limit, dryRun } = body;
    const { store, now } = this.admin;
    const found = await store.admin.listRetryableRuns({ status, source, since, until, limit });
    if (dryRun || found.runs.length === 0) return { matched: found.matched, retries: [] };
    const at = now();
    const retries = found.runs.map((stored) => retryRun(stored, at));
    const actions: Action[] = retries.map((run) => ({ kind: 'agent', run }));
    await store.accept(actions, () => ({ status: 202, body: '' }));
    return { matched: found.matched, retries };
  }
}

/** `POST /api/runs/:runId/redeliver`: the run's reply queued again, to the same route. */
async function redeliver(admin: RunAdmin, runId: string, reply: FastifyReply) {
  const outcome = await admin.store.admin.redeliverRun(runId, admin.now());
  switch (outcome) {
    case 'not_found':
      throw notFound(runId);
    case 'nothing_to_deliver':
      throw new HttpError(
        'nothing_to_deliver',
        `run "${runId}" has no reply to deliver (not finished, failed, deliver was false, or the reply was only a heartbeat acknowledgement)`,
      );
    case 'delivery_pending':
      throw new HttpError(
        'delivery_pending',
        `the reply of run "${runId}" is still being delivered; redeliver once that delivery ended`,
      );
    case 'enqueued':
      return reply.code(202).send({ ok: true as const });
  }
}

/** A retry: the new run, which names the run it retries. */
type Retry = NewRun & { retryOf: string };

/**
 * The new run that retries `run`: the same inputs, a new id, `retryOf` naming it. A retry is the
 * operator's, not the sender's: it carries no hook token (docs/senders.md), nor the trace of the
 * hook request that queued the first run (docs/tracing.md).
 */
function retryRun({ run, attachments }: StoredRun, at: number): Retry {
  return {
    ...run,
    id: `run_${uuidv7(at)}`,
    createdAt: at,
    retryOf: run.id,
    tokenId: null,
    traceParent: null,
    // Nobody holds a stream for it (docs/callers.md, "Streamed answers").
    stream: false,
    // The same files (docs/attachments.md, "Retries"), copied inside the store by the accept.
    attachments: null,
    attachmentsFrom: attachments.length > 0 ? { runId: run.id, list: attachments } : null,
  };
}

// The routes' OpenAPI fields and checks (admin-schemas.ts).
const LIST_RUNS = {
  summary: 'List runs, newest first',
  tags: ['runs'],
  security: ADMIN_SECURITY,
  querystring: RunsQuery,
  response: { 200: RunPage, 400: ErrorAnswer, 401: ErrorAnswer },
};
const RETRY = {
  summary: 'Run a finished run again, with the same inputs, as a new run',
  tags: ['runs'],
  security: ADMIN_SECURITY,
  params: RunParams,
  response: { 202: RetryAnswer, 401: ErrorAnswer, 404: ErrorAnswer, 409: ErrorAnswer },
};
const BULK_RETRY = {
  summary: 'Retry every finished run with a status (and a source, a finish time window), each as a new run',
  tags: ['runs'],
  security: ADMIN_SECURITY,
  body: BulkRetryBody,
  response: { 200: BulkRetryAnswer, 202: BulkRetryAnswer, 400: ErrorAnswer, 401: ErrorAnswer },
};
const REDELIVER = {
  summary: "Deliver a run's reply again, to the same route",
  tags: ['runs'],
  security: ADMIN_SECURITY,
  params: RunParams,
  response: { 202: OkAnswer, 401: ErrorAnswer, 404: ErrorAnswer, 409: ErrorAnswer },
};
const DELIVERIES = {
  summary: 'List reply deliveries (the outbox), newest first',
  tags: ['deliveries'],
  security: ADMIN_SECURITY,
  querystring: DeliveriesQuery,
  response: { 200: DeliveriesAnswer, 400: ErrorAnswer, 401: ErrorAnswer },
};
const CALLBACKS = {
  summary: 'List completion callbacks, newest first',
  tags: ['callbacks'],
  security: ADMIN_SECURITY,
  querystring: CallbacksQuery,
  response: { 200: CallbacksAnswer, 400: ErrorAnswer, 401: ErrorAnswer },
};
