/** Mattermost's forms of `to` (docs/recipients.md): a channel id, or a user (a direct message). */
import { prefixedId, type RecipientRules } from '../../kit/recipients.js';

export type MattermostRecipient = { kind: 'channel'; id: string } | { kind: 'user'; id: string };

export const mattermostRecipients: RecipientRules<MattermostRecipient> = {
  expected: 'a channel id, channel:<id>, or user:<id> (a direct message)',
  // Mattermost ids are 26 lowercase base32 characters today; any length is let through.
  parse: (to) => prefixedId(to, /^[a-z0-9]+$/),
};
