/**
 * Every form of `to` per platform (docs/recipients.md, "Recipient forms of `to`"), parsed
 * once into a typed recipient by the rules each platform's folder writes
 * (platforms/<id>/recipients.ts): the ingress checks `to` at the door with the same parser
 * the platform uses to build its request, so what is accepted is what is sent.
 */
import { parseWith, RecipientError, type RecipientRules } from './kit/recipients.js';
import { type AnyPlatform, type ChannelId, PLATFORMS, platformOf } from './platforms/index.js';

export { RecipientError } from './kit/recipients.js';

/** Each channel's typed recipient. */
export type Recipients = {
  [P in AnyPlatform as P['id']]: P['recipients'] extends RecipientRules<infer R> ? R : never;
};

/** The forms each channel takes, as a 400 names them. */
export const EXPECTED = Object.fromEntries(
  PLATFORMS.map((platform) => [platform.id, platform.recipients.expected]),
) as Record<ChannelId, string>;

/** The typed recipient `to` names on `channel`; throws RecipientError when it names none. */
export function parseRecipient<C extends ChannelId>(channel: C, to: string): Recipients[C] {
  return parseWith(channel, platformOf(channel).recipients as RecipientRules<Recipients[C]>, to);
}

/** Undefined when `to` can be valid for the channel, else what was expected. */
export function recipientProblem(channel: ChannelId, to: string): string | undefined {
  try {
    parseRecipient(channel, to);
    return undefined;
  } catch (error) {
    if (error instanceof RecipientError) return error.message;
    throw error;
  }
}
