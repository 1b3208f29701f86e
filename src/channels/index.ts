/**
 * The platform adapters for the configured channels (`channels`; docs/platforms.md),
 * one small module per platform under adapters/.
 */
import type { ChannelId, ChannelsConfig } from '../config/schema.js';
import { createDiscordAdapter } from './adapters/discord.js';
import { createIMessageAdapter } from './adapters/imessage.js';
import { createMattermostAdapter } from './adapters/mattermost.js';
import { createMsTeamsAdapter } from './adapters/msteams.js';
import { createSignalAdapter } from './adapters/signal.js';
import { createSlackAdapter } from './adapters/slack.js';
import { createTelegramAdapter } from './adapters/telegram.js';
import { createWhatsAppAdapter } from './adapters/whatsapp.js';
import type { AdapterOptions, ChannelAdapter } from './types.js';

export function createChannelAdapters(
  channels: ChannelsConfig,
  options: AdapterOptions = {},
): Map<ChannelId, ChannelAdapter> {
  const adapters = new Map<ChannelId, ChannelAdapter>();
  const add = (adapter: ChannelAdapter) => adapters.set(adapter.id, adapter);
  if (channels.whatsapp) add(createWhatsAppAdapter(channels.whatsapp, options));
  if (channels.telegram) {
    add(
      createTelegramAdapter({
        botToken: channels.telegram.botToken,
        apiBaseUrl: channels.telegram.apiBaseUrl,
        ...(options.fetch ? { fetch: options.fetch } : {}),
        ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      }),
    );
  }
  if (channels.discord) add(createDiscordAdapter(channels.discord, options));
  if (channels.slack) add(createSlackAdapter(channels.slack, options));
  if (channels.mattermost) add(createMattermostAdapter(channels.mattermost, options));
  if (channels.signal) add(createSignalAdapter(channels.signal, options));
  if (channels.imessage) add(createIMessageAdapter(channels.imessage, options));
  if (channels.msteams) add(createMsTeamsAdapter(channels.msteams, options));
  return adapters;
}
