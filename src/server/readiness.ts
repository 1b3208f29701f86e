/**
 * `GET /readyz` (CONTRACT §9, no auth): 200 once the store answers a cheap
 * query and the gateway's parts (workers included) are running; 503
 * `unavailable` otherwise — while starting or stopping, and while the store
 * does not answer (PostgreSQL gone: a load balancer takes the replica out until
 * the database is back, and it recovers by itself).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { HttpError } from '../http/errors.js';
import type { Store } from '../store/types.js';
import { ErrorAnswer, OkAnswer } from './admin-schemas.js';

/** How long the store may take to answer before the gateway counts as not ready. */
export const READY_PING_TIMEOUT_MS = 2000;

export interface ReadinessDeps {
  store: Pick<Store, 'ping'>;
  /** Whether every part of the gateway has started and none is stopping. */
  isRunning?: () => boolean;
  pingTimeoutMs?: number;
}

export function registerReadiness(app: FastifyInstance, deps: ReadinessDeps): void {
  const timeoutMs = deps.pingTimeoutMs ?? READY_PING_TIMEOUT_MS;
  app.withTypeProvider<ZodTypeProvider>().get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: the store answers and the workers run',
        tags: ['health'],
        response: { 200: OkAnswer, 503: ErrorAnswer },
      },
    },
    async () => {
      if (deps.isRunning && !deps.isRunning()) throw unavailable('the gateway is starting or stopping');
      const problem = await storeProblem(deps.store, timeoutMs);
      if (problem) throw unavailable(`the store does not answer: ${problem}`);
      return { ok: true as const };
    },
  );
}

const unavailable = (why: string) =>
  new HttpError(503, 'unavailable', `not ready: ${why}`, { 'retry-after': '1' });

/** Why the store did not answer within `timeoutMs`, or undefined when it did. */
async function storeProblem(store: Pick<Store, 'ping'>, timeoutMs: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([
      store.ping().then(
        () => undefined,
        (error: Error) => error?.message ?? String(error),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
