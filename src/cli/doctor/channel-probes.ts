/**
 * Doctor's channel checks: for each configured channel, the probe its platform's folder
 * describes (src/channels/platforms/<id>/probe.ts) — one cheap authenticated call,
 * read-only, that proves the credentials the adapter will send with, and never sends a
 * message. Run in the registry's order.
 */
import type { z } from 'zod';
import type { PlatformDescriptor } from '../../channels/kit/descriptor.js';
import { type ChannelId, PLATFORMS } from '../../channels/platforms/index.js';
import type { ChannelsConfig } from '../../config/schema.js';
import { httpProbe } from './http-probe.js';
import type { Probe } from './types.js';

export function channelProbes(channels: ChannelsConfig, timeoutMs: number): Probe[] {
  const probes: Probe[] = [];
  for (const platform of PLATFORMS) {
    const config = channels[platform.id];
    if (!config) continue;
    const name = `channel ${platform.id}`;
    // A platform with its own section: a pairing the registry's union type cannot spell out.
    const call = (platform as PlatformDescriptor<ChannelId, z.ZodType, unknown>).probe(config, name);
    probes.push({ name, run: (signal) => httpProbe({ name, timeoutMs, signal, ...call }) });
  }
  return probes;
}
