/**
 * Doctor's probe of `channels.signal`: JSON-RPC `version` on `rpcUrl`, with the Basic auth
 * its user info becomes, as for sending (send.ts).
 */
import { randomUUID } from 'node:crypto';
import { fail, ok, type ProbeCall, refused, statusDetail, str } from '../../../http/probe.js';
import type { SignalConfig } from './config.js';
import { signalEndpoint } from './send.js';

export function signalProbe(config: SignalConfig, name: string): ProbeCall {
  const { url, headers, secrets } = signalEndpoint(config.rpcUrl);
  return {
    request: { url, headers, json: { jsonrpc: '2.0', method: 'version', id: randomUUID() } },
    secrets,
    judge: (answer, say) => {
      const result = answer.json?.result as { version?: unknown } | undefined;
      if (answer.status === 200 && result)
        return ok(name, `signal-cli ${str(result.version) ?? '(version unknown)'}`);
      const rpcError = str((answer.json?.error as { message?: unknown } | undefined)?.message);
      if (answer.status === 200 && rpcError)
        return fail(name, say(`the daemon refused the call: ${rpcError}`));
      if (answer.status === 404) {
        return fail(
          name,
          `${statusDetail(answer, undefined, say)}: channels.signal.rpcUrl must be signal-cli's /api/v1/rpc endpoint`,
        );
      }
      return refused(name, answer, say, undefined, 'the user info in channels.signal.rpcUrl');
    },
  };
}
