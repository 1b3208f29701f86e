/** Telegram (Bot API), whole: docs/platforms.md; its sending in send.ts. */

import { writeTelegram } from '../../format/telegram.js';
import { createAdapter } from '../../kit/adapter.js';
import { definePlatform } from '../../kit/descriptor.js';
import type { AdapterOptions } from '../../kit/types.js';
import { type TelegramConfig, telegramConfig } from './config.js';
import { telegramProbe } from './probe.js';
import { telegramRecipients } from './recipients.js';
import { TELEGRAM_TEXT_LIMIT, telegramPlatform } from './send.js';

export { TELEGRAM_TEXT_LIMIT, telegramChatId } from './send.js';

export const telegram = definePlatform({
  id: 'telegram',
  config: telegramConfig,
  recipients: telegramRecipients,
  maxMessageLength: TELEGRAM_TEXT_LIMIT,
  // Telegram counts the text after parsing the HTML: the plain twin is what is measured.
  format: { writer: { write: writeTelegram, measure: (part) => (part.plain ?? part.text).length } },
  platform: telegramPlatform,
  probe: telegramProbe,
});

export function createTelegramAdapter(options: TelegramConfig & AdapterOptions) {
  const { botToken, apiBaseUrl } = options;
  return createAdapter(telegram, { botToken, apiBaseUrl }, options);
}
