/** Doctor's probe of `channels.telegram`: `GET {apiBaseUrl}/bot{token}/getMe`. */
import { joinUrl } from '../../../http/outbound.js';
import { fail, ok, type ProbeCall, refused, statusDetail, str } from '../../../http/probe.js';
import type { TelegramConfig } from './config.js';

export function telegramProbe(config: TelegramConfig, name: string): ProbeCall {
  return {
    request: { url: joinUrl(config.apiBaseUrl, `bot${config.botToken}/getMe`) },
    secrets: [config.botToken],
    judge: (answer, say) => {
      const result = answer.json?.result as { username?: string } | undefined;
      if (answer.status === 200 && answer.json?.ok === true)
        return ok(name, `bot @${result?.username ?? '?'}`);
      // Telegram answers a malformed token 404 Not Found (a well-formed wrong one 401).
      if (answer.status === 404 && answer.json?.ok === false) {
        return fail(
          name,
          `channels.telegram.botToken is refused: ${statusDetail(answer, str(answer.json?.description), say)}`,
        );
      }
      return refused(name, answer, say, str(answer.json?.description), 'channels.telegram.botToken');
    },
  };
}
