/** The OutboundErrors a request ends in when it gets no usable answer (../outbound.ts). */
import { classifyStatus, networkCode, quote, retryAfterMs } from './kit.js';
import { type ClientContext, type Describe, OutboundError, type OutboundResponse } from './types.js';

/** No answer, or an answer that broke off: a temporary failure naming the network's code. */
export function networkFailure(client: ClientContext, error: unknown, answer?: Response): OutboundError {
  const code = networkCode(error);
  const what = answer ? 'the answer broke off' : 'request failed';
  return new OutboundError(client.redact(`${client.label}: ${what} (${code})`), {
    failure: 'network',
    kind: 'temporary',
    code,
    duringAnswer: answer !== undefined,
    ...(answer && { answer: { status: answer.status, headers: answer.headers } }),
  });
}

/** The request's guard refused its target: permanent, no connection made. */
export function refusedFailure(client: ClientContext, reason: string): OutboundError {
  return new OutboundError(client.redact(`${client.label}: refused: ${reason}`), {
    failure: 'refused',
    kind: 'permanent',
    refusal: reason,
  });
}

/** A non-2xx answer, classified, with Retry-After and a short detail (`describe`'s, else the body quoted). */
export function statusFailure(
  client: ClientContext,
  answer: OutboundResponse,
  describe?: Describe,
): OutboundError {
  const detail = describe?.(answer) ?? (quote(answer.raw) || answer.statusText || 'request failed');
  return new OutboundError(client.redact(`${client.label}: ${answer.status} ${detail}`), {
    failure: 'status',
    kind: classifyStatus(answer.status) === 'permanent' ? 'permanent' : 'temporary',
    status: answer.status,
    retryAfterMs: retryAfterMs([answer.headers.get('retry-after')], client.now()),
  });
}
