/** `channels.whatsapp` (docs/platforms.md): the Cloud API's phone number id and token. */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';

export const whatsappConfig = z.strictObject({
  phoneNumberId: nonEmpty,
  accessToken: nonEmpty,
  apiBaseUrl: nonEmpty.default('https://graph.facebook.com/v21.0'),
});
export type WhatsAppConfig = z.output<typeof whatsappConfig>;
