/**
 * A run's steps and the operator's decision on a waiting run (docs/operating.md, "A run's
 * steps" and "Approving tool calls"). Registered by admin-routes.ts inside its authenticated
 * scope, so both take the admin token only.
 *
 * A decision is taken once, whatever the number of replicas: the store's conditional update
 * (store.steps.decide) lets one through, and every other is 409 `not_waiting`.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { echoed, HttpError } from '../http/errors.js';
import { iso } from '../store/rows.js';
import type { RunStep, Store } from '../store/types.js';
import { jsonObjectBody, noBodyIsEmpty } from './admin-json-body.js';
import { ADMIN_SECURITY, ErrorAnswer, OkAnswer, RunParams } from './admin-schemas.js';
import { ApprovalBody, StepsAnswer, type StepView } from './steps-schemas.js';

export interface RunStepsDeps {
  store: Store;
  now?: () => number;
}

const STEPS = {
  summary: 'A run’s steps',
  description: 'The model and tool calls its loop committed, in order.',
  tags: ['runs'],
  security: ADMIN_SECURITY,
  params: RunParams,
  response: { 200: StepsAnswer, 401: ErrorAnswer, 404: ErrorAnswer },
};

const APPROVAL = {
  summary: 'Approve or deny the tool call a run waits for',
  description:
    'The run is queued again and its loop goes on: an approved call is made, a denied one is given ' +
    'to the model as denied by the operator. 409 `not_waiting` when the run waits for nothing ' +
    '(not waiting, or already decided).',
  tags: ['runs'],
  security: ADMIN_SECURITY,
  params: RunParams,
  body: ApprovalBody,
  response: { 200: OkAnswer, 400: ErrorAnswer, 401: ErrorAnswer, 404: ErrorAnswer, 409: ErrorAnswer },
};

/** A decision's body is one field: far below this. */
const APPROVAL_BODY_LIMIT = 4 * 1024;

const notFound = (runId: string) => new HttpError('not_found', `no run with id "${echoed(runId)}"`);

export function registerRunStepsRoutes(app: FastifyInstance, deps: RunStepsDeps): void {
  const { store } = deps;
  const now = deps.now ?? Date.now;
  app
    .withTypeProvider<ZodTypeProvider>()
    .get('/api/runs/:runId/steps', { schema: STEPS }, async (request) => {
      const { runId } = request.params;
      const [run, steps] = await Promise.all([store.getRun(runId), store.steps.list(runId)]);
      if (!run) throw notFound(runId);
      return { steps: steps.map(toStepView) };
    });
  // In a scope of its own: it reads a body (a JSON object whatever the Content-Type; none reads as `{}`).
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', jsonObjectBody(APPROVAL_BODY_LIMIT));
    scope
      .withTypeProvider<ZodTypeProvider>()
      .post(
        '/api/runs/:runId/approval',
        { schema: APPROVAL, preValidation: noBodyIsEmpty },
        async (request, reply) => decide(store, request.params.runId, request.body, now(), reply),
      );
  });
}

async function decide(
  store: Store,
  runId: string,
  body: z.output<typeof ApprovalBody>,
  at: number,
  reply: FastifyReply,
) {
  const result = await store.steps.decide(runId, body.decision, at);
  if (result === 'ok') return reply.code(200).send({ ok: true as const });
  const run = await store.getRun(runId);
  if (!run) throw notFound(runId);
  throw new HttpError('not_waiting', `run "${echoed(runId)}" is ${run.status} and waits for no decision`);
}

/** A step as the API shows it: times in ISO 8601, a tool step's call, a model step's text. */
export function toStepView(step: RunStep): z.output<typeof StepView> {
  const times = { startedAt: iso(step.startedAt) as string, finishedAt: iso(step.finishedAt) as string };
  if (step.kind === 'model') {
    return {
      index: step.index,
      kind: 'model',
      ...(step.text ? { result: step.text } : {}),
      status: 'ok',
      ...times,
    };
  }
  const { index, tool, arguments: args, result, status } = step;
  return { index, kind: 'tool', tool, arguments: args, result, status, ...times };
}
