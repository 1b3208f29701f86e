/**
 * The platform adapters for the configured channels (`channels`; docs/platforms.md):
 * one for each platform of the registry (platforms/index.ts) that has a section.
 */
import type { z } from 'zod';
import type { ChannelsConfig } from '../config/schema.js';
import { createAdapter } from './kit/adapter.js';
import type { PlatformDescriptor } from './kit/descriptor.js';
import type { AdapterOptions } from './kit/types.js';
import { type ChannelId, PLATFORMS } from './platforms/index.js';
import type { ChannelAdapter } from './types.js';

export function createChannelAdapters(
  channels: ChannelsConfig,
  options: AdapterOptions = {},
): Map<ChannelId, ChannelAdapter> {
  const adapters = new Map<ChannelId, ChannelAdapter>();
  for (const platform of PLATFORMS) {
    const config = channels[platform.id];
    if (config === undefined) continue;
    // Each platform with its own section: a pairing the registry's union type cannot spell out.
    const descriptor = platform as PlatformDescriptor<ChannelId, z.ZodType, unknown>;
    adapters.set(platform.id, createAdapter(descriptor, config, options));
  }
  return adapters;
}
