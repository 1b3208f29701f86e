/** Discord, whole: docs/platforms.md; its sending in send.ts. */

import { escapeMarkdown, markdownWriter } from '../../format/markdown.js';
import { createAdapter } from '../../kit/adapter.js';
import { definePlatform } from '../../kit/descriptor.js';
import type { AdapterOptions } from '../../kit/types.js';
import { type DiscordConfig, discordConfig } from './config.js';
import { discordProbe } from './probe.js';
import { discordRecipients } from './recipients.js';
import { DISCORD_TEXT_LIMIT, discordPlatform } from './send.js';

export { DISCORD_TEXT_LIMIT, discordChannelId } from './send.js';

export const discord = definePlatform({
  id: 'discord',
  config: discordConfig,
  recipients: discordRecipients,
  maxMessageLength: DISCORD_TEXT_LIMIT,
  format: {
    writer: { write: markdownWriter({ headingLevels: 3 }) },
    // Discord formats every message: a notice's Markdown characters are escaped, so it shows as written.
    noticeEscape: (char) => escapeMarkdown(char, false),
  },
  platform: discordPlatform,
  probe: discordProbe,
});

export function createDiscordAdapter(config: DiscordConfig, options: AdapterOptions = {}) {
  return createAdapter(discord, config, options);
}
