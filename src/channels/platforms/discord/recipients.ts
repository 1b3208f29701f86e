/** Discord's forms of `to` (docs/recipients.md): a channel id, or a user (a direct message). */
import { prefixedId, type RecipientRules } from '../../kit/recipients.js';

export type DiscordRecipient = { kind: 'channel'; id: string } | { kind: 'user'; id: string };

export const discordRecipients: RecipientRules<DiscordRecipient> = {
  expected: 'a channel id (a snowflake), channel:<id>, or user:<id> (a direct message)',
  parse(to) {
    const parsed = prefixedId(to, /^\d{1,20}$/);
    // A snowflake is an unsigned 64-bit integer: zero or more never names anything.
    return parsed && BigInt(parsed.id) > 0n && BigInt(parsed.id) < 2n ** 64n ? parsed : undefined;
  },
};
