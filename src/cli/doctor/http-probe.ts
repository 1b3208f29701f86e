/**
 * One authenticated call to an outside service, through the project's outbound
 * client (time limit, error codes instead of messages that may quote a URL,
 * secrets scrubbed). The caller judges the answer; no answer at all is a fail.
 */
import {
  createOutboundClient,
  hostOf,
  OutboundError,
  type OutboundRequest,
  type OutboundResponse,
  quote,
} from '../../http/outbound.js';
import { type CheckResult, fail } from './types.js';

export interface HttpProbe {
  name: string;
  request: OutboundRequest;
  /** Strings that must never be shown (tokens, keys, passwords, also URL-encoded). */
  secrets: (string | undefined)[];
  timeoutMs: number;
  signal: AbortSignal;
  /** The verdict on an answer; `say` scrubs the secrets from any text taken from it. */
  judge(answer: OutboundResponse, say: (text: string) => string): CheckResult;
}

export async function httpProbe(probe: HttpProbe): Promise<CheckResult> {
  const secrets = probe.secrets.flatMap((secret) => (secret ? [secret, encodeURIComponent(secret)] : []));
  const client = createOutboundClient({ label: probe.name, secrets, timeoutMs: probe.timeoutMs });
  let answer: OutboundResponse;
  try {
    answer = await client.send(probe.request, probe.signal);
  } catch (error) {
    if (!(error instanceof OutboundError)) {
      return fail(
        probe.name,
        `cannot reach ${hostOf(probe.request.url)}: ${client.redact((error as Error).message ?? 'aborted')}`,
      );
    }
    const why =
      error.failure === 'timeout'
        ? `no answer within ${probe.timeoutMs / 1000} s`
        : (error.code ?? 'network error');
    return fail(probe.name, `cannot reach ${hostOf(probe.request.url)}: ${why}`);
  }
  return probe.judge(answer, client.redact);
}

/** `HTTP 401: <the service's message, else a slice of the body>`. */
export function statusDetail(
  answer: OutboundResponse,
  message: string | undefined,
  say: (text: string) => string,
): string {
  const detail = message ?? (quote(answer.raw, 120) || answer.statusText);
  return say(`HTTP ${answer.status}${detail ? `: ${detail}` : ''}`);
}
