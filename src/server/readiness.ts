/**
 * `GET /readyz` (no auth; docs/operating.md, "Health and readiness"): 200 once
 * the gateway's parts (workers included) are running, the store answers a cheap
 * query and it can commit; 503 `unavailable` otherwise — while starting or
 * stopping, while the store does not answer (PostgreSQL gone), and while writes
 * fail (a full disk, a read-only store). A load balancer then takes the replica
 * out, and it becomes ready again by itself: the commit check probes on its own
 * (commit-check.ts), so it does not wait for hook traffic the balancer withholds.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { HttpError } from '../http/errors.js';
import type { AdminStore } from '../store/types.js';
import { ErrorAnswer, OkAnswer } from './admin-schemas.js';
import { CommitCheck } from './commit-check.js';

/** How long the store may take to answer (ping and commit check together) before the gateway counts as not ready. */
export const READY_PING_TIMEOUT_MS = 2000;

export interface ReadinessDeps {
  store: { admin: Pick<AdminStore, 'ping' | 'probeCommit'> };
  /** Whether every part of the gateway has started and none is stopping. */
  isRunning?: () => boolean;
  /** Shared with the error handler, which tells it of failed writes; one of its own otherwise. */
  commits?: CommitCheck;
  pingTimeoutMs?: number;
}

export function registerReadiness(app: FastifyInstance, deps: ReadinessDeps): void {
  const timeoutMs = deps.pingTimeoutMs ?? READY_PING_TIMEOUT_MS;
  const { store } = deps;
  const commits = deps.commits ?? new CommitCheck((now) => store.admin.probeCommit(now));
  app.withTypeProvider<ZodTypeProvider>().get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: the workers run, the store answers and can commit',
        tags: ['health'],
        response: { 200: OkAnswer, 503: ErrorAnswer },
      },
    },
    async () => {
      if (deps.isRunning && !deps.isRunning()) throw unavailable('the gateway is starting or stopping');
      const problem = await within(timeoutMs, storeProblem(store, commits));
      if (problem) throw unavailable(problem);
      return { ok: true as const };
    },
  );
}

const unavailable = (why: string) =>
  new HttpError('unavailable', `not ready: ${why}`, { 'retry-after': '1' });

/** Why the store is not ready: it does not answer a read (every time), or cannot commit. */
async function storeProblem(
  store: { admin: Pick<AdminStore, 'ping'> },
  commits: CommitCheck,
): Promise<string | undefined> {
  try {
    await store.admin.ping();
  } catch (error) {
    return `the store does not answer: ${(error as Error)?.message ?? String(error)}`;
  }
  const problem = await commits.problem();
  return problem === undefined ? undefined : `the store cannot commit: ${problem}`;
}

/** `check`'s answer, or a problem saying it did not come within `timeoutMs`. */
async function within(timeoutMs: number, check: Promise<string | undefined>): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(
      () => resolve(`the store does not answer: no answer within ${timeoutMs} ms`),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([check, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
