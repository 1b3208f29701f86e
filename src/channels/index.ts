/**
 * The platform adapters for the configured channels (CONTRACT §3 `channels`).
 * Telegram is the only platform with an adapter so far: a channel configured
 * for another platform gets no entry here, and the delivery service answers
 * such deliveries with "delivery to <channel> is not available".
 */
import type { ChannelId, ChannelsConfig } from '../config/schema.js';
import { createTelegramAdapter } from './adapters/telegram.js';
import type { ChannelAdapter } from './types.js';

export interface ChannelAdapterOptions {
  /** Replaces the global fetch (tests, proxies). */
  fetch?: typeof fetch;
}

export function createChannelAdapters(
  channels: ChannelsConfig,
  options: ChannelAdapterOptions = {},
): Map<ChannelId, ChannelAdapter> {
  const adapters = new Map<ChannelId, ChannelAdapter>();
  if (channels.telegram) {
    adapters.set(
      'telegram',
      createTelegramAdapter({
        botToken: channels.telegram.botToken,
        apiBaseUrl: channels.telegram.apiBaseUrl,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      }),
    );
  }
  return adapters;
}
