/** Doctor's probe of `channels.msteams`: a token from `tokenUrl` by client credentials, as sending gets one. */
import { fail, ok, type ProbeCall, statusDetail, str, warn } from '../../../http/probe.js';
import type { MsTeamsConfig } from './config.js';
import { BOT_FRAMEWORK_SCOPE, tokenUrlOf } from './send.js';

export function msteamsProbe(config: MsTeamsConfig, name: string): ProbeCall {
  return {
    request: {
      url: tokenUrlOf(config),
      headers: { accept: 'application/json' },
      form: {
        grant_type: 'client_credentials',
        client_id: config.appId,
        client_secret: config.appPassword,
        scope: BOT_FRAMEWORK_SCOPE,
      },
    },
    secrets: [config.appPassword, new URLSearchParams({ s: config.appPassword }).toString().slice(2)],
    judge: (answer, say) => {
      const token = answer.json?.access_token;
      if (answer.status === 200 && typeof token === 'string' && token) {
        return ok(name, 'token issued for the Bot Framework');
      }
      const error = str(answer.json?.error);
      const description = str(answer.json?.error_description)?.split(/\r?\n/)[0];
      const detail = statusDetail(answer, [error, description].filter(Boolean).join(': ') || undefined, say);
      if (answer.status === 400 || answer.status === 401) {
        return fail(name, `channels.msteams.appId/appPassword refused by the token endpoint: ${detail}`);
      }
      return answer.status === 429 || answer.status >= 500 ? warn(name, detail) : fail(name, detail);
    },
  };
}
