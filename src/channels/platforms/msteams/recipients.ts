/** Microsoft Teams' forms of `to` (docs/recipients.md): a conversation id. */
import type { RecipientRules } from '../../kit/recipients.js';

export type MsTeamsRecipient = { conversationId: string };

export const msteamsRecipients: RecipientRules<MsTeamsRecipient> = {
  expected: 'a conversation id (19:…@thread.v2, a:…) or conversation:<id>',
  parse(to) {
    const id = to.startsWith('conversation:') ? to.slice('conversation:'.length) : to;
    return /^[0-9A-Za-z]+:\S+$/.test(id) ? { conversationId: id } : undefined;
  },
};
