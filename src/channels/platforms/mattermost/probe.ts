/** Doctor's probe of `channels.mattermost`: `GET {baseUrl}/api/v4/users/me` (Bearer). */
import { joinUrl } from '../../../http/outbound.js';
import { ok, type ProbeCall, refused, str } from '../../../http/probe.js';
import type { MattermostConfig } from './config.js';

export function mattermostProbe(config: MattermostConfig, name: string): ProbeCall {
  return {
    request: {
      url: joinUrl(config.baseUrl, '/api/v4/users/me'),
      headers: { authorization: `Bearer ${config.token}` },
    },
    secrets: [config.token],
    judge: (answer, say) =>
      answer.status === 200
        ? ok(name, say(`authenticated as @${str(answer.json?.username) ?? '?'}`))
        : refused(name, answer, say, str(answer.json?.message), 'channels.mattermost.token'),
  };
}
