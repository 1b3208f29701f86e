/** iMessage's forms of `to` (docs/recipients.md): a number or an email address, or a chat's GUID. */
import { E164, EMAIL, type RecipientRules } from '../../kit/recipients.js';

export type IMessageRecipient = { kind: 'address'; address: string } | { kind: 'chat'; chatGuid: string };

export const imessageRecipients: RecipientRules<IMessageRecipient> = {
  expected: 'a phone number in E.164 form, an email address, or chat:<chatGuid>',
  parse(to) {
    const chat = /^chat:(.+)$/.exec(to);
    // BlueBubbles' chat GUIDs are `<service>;<+ group | - one-to-one>;<identifier>`.
    if (chat)
      return /^[A-Za-z]+;[+-];\S+$/.test(chat[1] as string)
        ? { kind: 'chat', chatGuid: chat[1] as string }
        : undefined;
    return E164.test(to) || EMAIL.test(to) ? { kind: 'address', address: to } : undefined;
  },
};
