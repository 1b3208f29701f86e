/** `channels.discord` (docs/platforms.md): the bot's token. */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';

export const discordConfig = z.strictObject({
  botToken: nonEmpty,
  apiBaseUrl: nonEmpty.default('https://discord.com/api/v10'),
});
export type DiscordConfig = z.output<typeof discordConfig>;
