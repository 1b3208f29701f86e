/** Doctor's probe of `channels.imessage`: `GET {serverUrl}/api/v1/ping?password=…` (BlueBubbles' own auth). */
import { joinUrl } from '../../../http/outbound.js';
import { ok, type ProbeCall, refused, str } from '../../../http/probe.js';
import type { IMessageConfig } from './config.js';

export function imessageProbe(config: IMessageConfig, name: string): ProbeCall {
  return {
    // BlueBubbles takes its password only as a query parameter; it is scrubbed from every message.
    request: {
      url: `${joinUrl(config.serverUrl, '/api/v1/ping')}?password=${encodeURIComponent(config.password)}`,
    },
    secrets: [config.password],
    judge: (answer, say) =>
      answer.status === 200
        ? ok(name, 'BlueBubbles server answers')
        : refused(name, answer, say, str(answer.json?.message), 'channels.imessage.password'),
  };
}
