/** WhatsApp (Cloud API), whole: docs/platforms.md; its sending in send.ts. */

import { writeWhatsApp } from '../../format/whatsapp.js';
import { createAdapter } from '../../kit/adapter.js';
import { definePlatform } from '../../kit/descriptor.js';
import type { AdapterOptions } from '../../kit/types.js';
import { type WhatsAppConfig, whatsappConfig } from './config.js';
import { whatsappProbe } from './probe.js';
import { whatsappRecipients } from './recipients.js';
import { WHATSAPP_TEXT_LIMIT, whatsappPlatform } from './send.js';

export { WHATSAPP_TEXT_LIMIT, whatsappRecipient } from './send.js';

export const whatsapp = definePlatform({
  id: 'whatsapp',
  config: whatsappConfig,
  recipients: whatsappRecipients,
  maxMessageLength: WHATSAPP_TEXT_LIMIT,
  // Notices go with `preview_url: false` like every message; WhatsApp has no way to escape its markers.
  format: { writer: { write: writeWhatsApp } },
  platform: whatsappPlatform,
  probe: whatsappProbe,
});

export function createWhatsAppAdapter(config: WhatsAppConfig, options: AdapterOptions = {}) {
  return createAdapter(whatsapp, config, options);
}
