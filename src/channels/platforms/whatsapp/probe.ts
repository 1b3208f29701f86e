/** Doctor's probe of `channels.whatsapp`: `GET {apiBaseUrl}/{phoneNumberId}` (Bearer). */
import { joinUrl } from '../../../http/outbound.js';
import { fail, ok, type ProbeCall, refused, statusDetail, str } from '../../../http/probe.js';
import type { WhatsAppConfig } from './config.js';

export function whatsappProbe(config: WhatsAppConfig, name: string): ProbeCall {
  return {
    request: {
      url: joinUrl(config.apiBaseUrl, encodeURIComponent(config.phoneNumberId)),
      headers: { authorization: `Bearer ${config.accessToken}` },
    },
    secrets: [config.accessToken],
    judge: (answer, say) => {
      if (answer.status === 200) {
        return ok(
          name,
          say(`phone number ${str(answer.json?.display_phone_number) ?? config.phoneNumberId}`),
        );
      }
      const message = str((answer.json?.error as { message?: unknown } | undefined)?.message);
      if (answer.status === 400 || answer.status === 404) {
        return fail(
          name,
          `channels.whatsapp.phoneNumberId is not reachable with this token: ${statusDetail(answer, message, say)}`,
        );
      }
      return refused(name, answer, say, message, 'channels.whatsapp.accessToken');
    },
  };
}
