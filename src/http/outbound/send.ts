/** A request whose answer is read whole: `send` and `expectOk` (../outbound.ts). */
import { type GuardedTarget, guardedTarget } from '../connect-guard.js';
import { networkFailure, refusedFailure, statusFailure } from './failures.js';
import {
  type ClientContext,
  type Describe,
  OutboundError,
  type OutboundRequest,
  type OutboundResponse,
} from './types.js';
import { answerOf, fetchRequest, readBody } from './wire.js';

export async function send(
  client: ClientContext,
  request: OutboundRequest,
  signal?: AbortSignal,
): Promise<OutboundResponse> {
  const timeoutMs = request.timeoutMs ?? client.timeoutMs;
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let target: GuardedTarget | undefined;
  /** `answer`: the answer whose body was being read. */
  const failure = (error: unknown, answer?: Response): unknown => {
    // The caller's own abort (shutdown, run timeout) is theirs to interpret.
    if (signal?.aborted) return signal.reason;
    // The guard's lookup refused the name: the connection failed for that alone.
    const refusal = target?.refused === undefined ? target?.refusal() : undefined;
    if (refusal !== undefined) return refusedFailure(client, refusal);
    if (!timeout.aborted) return networkFailure(client, error, answer);
    return new OutboundError(client.redact(`${client.label}: no answer within ${timeoutMs / 1000} s`), {
      failure: 'timeout',
      kind: 'temporary',
      timeoutMs,
      ...(answer && { answer: { status: answer.status, headers: answer.headers } }),
    });
  };
  if (request.guard) {
    target = await guardedTarget(request.url, request.guard).catch((error) => {
      throw failure(error);
    });
    if (target.refused !== undefined) throw refusedFailure(client, target.refused);
  }
  const dispatcher = target?.refused === undefined ? target?.dispatcher : undefined;
  try {
    const init = { signal: combined, ...(dispatcher ? { dispatcher } : {}) };
    const response = await fetchRequest(client, request, init).catch((error) => {
      throw failure(error);
    });
    const read = await readBody(response, request.maxBodyBytes).catch((error) => {
      throw failure(error, response);
    });
    return answerOf(response, read);
  } finally {
    // The request's own connection: closed whatever happened.
    await dispatcher?.destroy().catch(() => {});
  }
}

export async function expectOk(
  client: ClientContext,
  request: OutboundRequest,
  signal?: AbortSignal,
  describe?: Describe,
): Promise<OutboundResponse> {
  const answer = await send(client, request, signal);
  if (answer.status >= 200 && answer.status < 300) return answer;
  throw statusFailure(client, answer, describe);
}
