/**
 * The registry: every messaging platform, one folder each (docs/platforms.md, "Adding a
 * platform"). The order is the one `channel: "last"` falls back in when a session has no
 * last route (the first configured of these), and the order of `channels` in the schema
 * and of doctor's channel checks.
 */
import { discord } from './discord/index.js';
import { imessage } from './imessage/index.js';
import { mattermost } from './mattermost/index.js';
import { msteams } from './msteams/index.js';
import { signal } from './signal/index.js';
import { slack } from './slack/index.js';
import { telegram } from './telegram/index.js';
import { whatsapp } from './whatsapp/index.js';

export const PLATFORMS = [whatsapp, telegram, discord, slack, mattermost, signal, imessage, msteams] as const;

export type AnyPlatform = (typeof PLATFORMS)[number];
export type ChannelId = AnyPlatform['id'];
/** The platform whose id is `Id`. */
export type PlatformOf<Id extends ChannelId> = Extract<AnyPlatform, { id: Id }>;

/** Every channel id, in the registry's order. */
export const CHANNEL_IDS = PLATFORMS.map((platform) => platform.id) as unknown as IdsOf<typeof PLATFORMS>;
type IdsOf<T extends readonly { id: string }[]> = {
  readonly [K in keyof T]: T[K] extends { id: infer I } ? I : never;
};

const BY_ID = new Map<string, AnyPlatform>(PLATFORMS.map((platform) => [platform.id, platform]));

export function platformOf<Id extends ChannelId>(id: Id): PlatformOf<Id> {
  return BY_ID.get(id) as PlatformOf<Id>;
}
