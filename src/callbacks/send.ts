/**
 * One callback attempt, through the outbound client (http/outbound.ts) with the
 * rules of docs/callers.md: the address guard applied to the address actually
 * connected to, on a connection of the attempt's own ("SSRF rules";
 * http/connect-guard.ts); redirects not followed, a 3xx being an answer like
 * any other, which the engine ends the callback on ("Retries"); and the
 * attempt's time limit over the answer, whose body is not used and is read
 * only up to ANSWER_BODY_BYTES.
 */
import type { Resolver } from '../http/connect-guard.js';
import { createOutboundClient, networkCode, OutboundError, retryAfterMs } from '../http/outbound.js';
import { forbiddenTarget, type SelfEndpoint } from './address-guard.js';

export type { Resolver } from '../http/connect-guard.js';

/** More of a receiver's answer than an acknowledgement needs is not read. */
export const ANSWER_BODY_BYTES = 16 * 1024;

export interface CallbackRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  self: readonly SelfEndpoint[];
  resolve?: Resolver;
  signal?: AbortSignal;
  /** For an HTTP-date Retry-After. */
  now?: number;
}

export type CallbackResult =
  /** The receiver answered (any status). */
  | { kind: 'answer'; status: number; retryAfterMs?: number }
  /** The guard refused the target: permanent. */
  | { kind: 'refused'; reason: string }
  /** No answer (refused, reset, DNS, timeout): temporary. */
  | { kind: 'network'; reason: string };

const client = createOutboundClient({ label: 'callback' });

export async function sendCallback(request: CallbackRequest): Promise<CallbackResult> {
  const answered = (status: number, headers: Headers): CallbackResult => ({
    kind: 'answer',
    status,
    retryAfterMs: retryAfterMs([headers.get('retry-after')], request.now),
  });
  try {
    const answer = await client.send(
      {
        method: 'POST',
        url: request.url,
        headers: request.headers,
        body: request.body,
        timeoutMs: request.timeoutMs,
        redirect: 'manual',
        maxBodyBytes: ANSWER_BODY_BYTES,
        guard: {
          check: (ip, port) => forbiddenTarget(ip, port, request.self),
          resolve: request.resolve,
        },
      },
      request.signal,
    );
    return answered(answer.status, answer.headers);
  } catch (error) {
    if (request.signal?.aborted) return { kind: 'network', reason: 'the gateway is stopping' };
    if (!(error instanceof OutboundError)) {
      return { kind: 'network', reason: `request failed (${networkCode(error)})` };
    }
    // The status had arrived when the body broke off or ran out of time: that is the answer.
    if (error.answer) return answered(error.answer.status, error.answer.headers);
    if (error.failure === 'refused') return { kind: 'refused', reason: error.refusal ?? 'refused' };
    if (error.failure === 'timeout') {
      return { kind: 'network', reason: `no answer within ${request.timeoutMs / 1000} s` };
    }
    // Only the code: a message may quote the URL, which may carry a token.
    return { kind: 'network', reason: `request failed (${error.code ?? 'network error'})` };
  }
}
