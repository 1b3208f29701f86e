/** Doctor's probe of `channels.slack`: `POST {apiBaseUrl}/auth.test` (Bearer). */
import { joinUrl } from '../../../http/outbound.js';
import { fail, ok, type ProbeCall, refused, str } from '../../../http/probe.js';
import type { SlackConfig } from './config.js';
import { SLACK_AUTH_ERRORS } from './send.js';

export function slackProbe(config: SlackConfig, name: string): ProbeCall {
  return {
    request: {
      method: 'POST',
      url: joinUrl(config.apiBaseUrl, 'auth.test'),
      headers: { authorization: `Bearer ${config.botToken}` },
      form: {},
    },
    secrets: [config.botToken],
    judge: (answer, say) => {
      const json = answer.json;
      if (answer.status === 200 && json?.ok === true) {
        return ok(name, say(`authenticated as ${str(json.user) ?? '?'} in ${str(json.team) ?? '?'}`));
      }
      const error = str(json?.error);
      // Slack answers HTTP 200 {ok:false, error} for a bad token.
      if (error && SLACK_AUTH_ERRORS.has(error))
        return fail(name, `channels.slack.botToken is refused: ${error}`);
      return refused(name, answer, say, error, 'channels.slack.botToken');
    },
  };
}
