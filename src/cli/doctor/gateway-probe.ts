/**
 * Whether the gateway this config describes is running and ready. Not running
 * is a warning, not a fail: doctor is also for before the first start.
 */
import type { ResolvedConfig } from '../../config/resolved.js';
import { createOutboundClient, OutboundError } from '../../http/outbound.js';
import { CliError } from '../cli-error.js';
import { gatewayUrl } from '../gateway-target.js';
import { type CheckResult, ok, type Probe, warn } from './types.js';

const NAME = 'gateway';

export function gatewayProbe(config: ResolvedConfig, timeoutMs: number): Probe {
  return { name: NAME, run: (signal) => check(config, timeoutMs, signal) };
}

async function check(config: ResolvedConfig, timeoutMs: number, signal: AbortSignal): Promise<CheckResult> {
  let url: string;
  try {
    url = gatewayUrl(config);
  } catch (error) {
    if (error instanceof CliError)
      return warn(NAME, 'gateway.port is 0 (random): cannot tell whether it runs');
    throw error;
  }
  const client = createOutboundClient({ label: NAME, timeoutMs });
  try {
    const health = await client.send({ url: `${url}/healthz` }, signal);
    if (health.status !== 200) return warn(NAME, `${url} answers /healthz with HTTP ${health.status}`);
    const ready = await client.send({ url: `${url}/readyz` }, signal);
    if (ready.status === 200 || ready.status === 404) return ok(NAME, `running at ${url}`);
    const sentence = typeof ready.json?.error === 'string' ? `: ${ready.json.error}` : '';
    return warn(NAME, `running at ${url} but not ready (HTTP ${ready.status}${sentence})`);
  } catch (error) {
    if (!(error instanceof OutboundError)) throw error;
    return warn(NAME, `not running at ${url} (${error.code ?? error.failure})`);
  }
}
