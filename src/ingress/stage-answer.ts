/**
 * The answer stage (docs/callers.md): a streamed answer follows its run; a
 * `waitForCompletion` request waits for its runs; any other gets the accept answer.
 */
import type { FastifyReply } from 'fastify';
import type { Action, RunView, StoredAnswer } from '../store/types.js';
import type { BuiltHook, HookDoor } from './hook-request.js';
import type { StreamAnswerOptions } from './stream-answer.js';
import { queuedAnswer, runIdsOf, waitAnswer } from './wait-answer.js';

/** The one run a streamed answer follows, or none when the answer names several (answered as usual). */
export function streamedRunId(answer: StoredAnswer): string | undefined {
  const runIds = runIdsOf(answer);
  return runIds.length === 1 ? runIds[0] : undefined;
}

/**
 * How a stream follows `runId`: a fresh commit's pieces live, a replay's none (its run read
 * before, as `known`, so a store that cannot answer is the usual 503).
 */
export function streamOptions(
  door: HookDoor,
  state: BuiltHook,
  runId: string,
  fresh: boolean,
  known: RunView | undefined,
): StreamAnswerOptions {
  const { hooks } = state.hooks.config;
  return {
    runId,
    subscription: fresh ? state.subscription : undefined,
    completions: door.completions,
    read: door.readRun,
    deadline: Date.now() + hooks.maxWaitSeconds * 1000,
    keepAliveMs: door.streamKeepAliveMs,
    stallMs: hooks.streams.stallSeconds * 1000,
    log: door.log,
    known,
  };
}

/** Whether any agent action asks to wait for its run (docs/callers.md, "Waiting in the answer"). */
export const waitsForCompletion = (actions: readonly Action[]): boolean => actions.some(waits);
const waits = (action: Action): boolean => action.kind === 'agent' && action.waitForCompletion === true;

/**
 * The answer of a `waitForCompletion` request (docs/callers.md): the runs are
 * committed already; a client that leaves while waiting only ends the wait.
 * A replay of such a request waits for the same runs, so a client that lost
 * its answer re-sends the request with the same Idempotency-Key to get it.
 */
export async function waitForRuns(
  door: HookDoor,
  state: BuiltHook,
  reply: FastifyReply,
  accepted: StoredAnswer,
  fresh: boolean,
): Promise<StoredAnswer> {
  const runIds = runIdsOf(accepted);
  // Gone already (during the commit): its 'close' has passed, so do not wait at all.
  const socket = reply.raw.socket;
  if (runIds.length === 0 || socket === null || socket.destroyed) return accepted;
  const left = new AbortController();
  const leave = () => left.abort();
  reply.raw.once('close', leave);
  try {
    const deadline = Date.now() + state.hooks.config.hooks.maxWaitSeconds * 1000;
    const views = await door.completions.wait(runIds, deadline, left.signal);
    return waitAnswer(accepted, views);
  } catch (error) {
    // A replay committed nothing now: the store's failure is the answer (503).
    if (!fresh) throw error;
    // Just committed, so queued as far as this request knows.
    return queuedAnswer(accepted);
  } finally {
    reply.raw.removeListener('close', leave);
  }
}

export function sendAnswer(reply: FastifyReply, answer: StoredAnswer): FastifyReply {
  return reply
    .code(answer.status)
    .header('content-type', 'application/json; charset=utf-8')
    .send(answer.body);
}
