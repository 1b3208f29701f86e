/** `channels.telegram` (docs/platforms.md): the bot's token. */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';

export const telegramConfig = z.strictObject({
  botToken: nonEmpty,
  apiBaseUrl: nonEmpty.default('https://api.telegram.org'),
});
export type TelegramConfig = z.output<typeof telegramConfig>;
