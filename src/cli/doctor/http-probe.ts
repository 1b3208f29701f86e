/**
 * One authenticated call to an outside service, through the project's outbound
 * client (time limit, error codes instead of messages that may quote a URL,
 * secrets scrubbed). The caller judges the answer; no answer at all is a fail.
 */
import { createOutboundClient, hostOf, OutboundError, type OutboundResponse } from '../../http/outbound.js';
import type { ProbeCall } from '../../http/probe.js';
import { type CheckResult, fail } from './types.js';

export { statusDetail } from '../../http/probe.js';

/** A probe's call (the platform's or the provider's), with the time it may take. */
export interface HttpProbe extends ProbeCall {
  name: string;
  timeoutMs: number;
  signal: AbortSignal;
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
