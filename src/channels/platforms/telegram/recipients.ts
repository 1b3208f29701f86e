/** Telegram's forms of `to` (docs/recipients.md): a chat id, `@channelname`, or a forum topic. */
import type { RecipientRules } from '../../kit/recipients.js';

export type TelegramRecipient = { chatId: number | string; threadId?: number };

export const telegramRecipients: RecipientRules<TelegramRecipient> = {
  expected: 'a numeric chat id (-100… for supergroups), @channelname, or <chatId>:topic:<threadId>',
  parse(to) {
    const topic = /^(.+):topic:(\d+)$/.exec(to);
    const chat = telegramChat(topic ? (topic[1] as string) : to);
    if (chat === undefined) return undefined;
    if (!topic) return { chatId: chat };
    const threadId = Number(topic[2]);
    return Number.isSafeInteger(threadId) && threadId > 0 ? { chatId: chat, threadId } : undefined;
  },
};

/** An integer for numeric ids (users, groups, `-100…` supergroups and channels), else `@username`. */
function telegramChat(value: string): number | string | undefined {
  if (/^-?\d+$/.test(value)) {
    const id = Number(value);
    if (id === 0) return undefined;
    // Beyond a double's exact range: passed on as the string Telegram also accepts.
    return Number.isSafeInteger(id) ? id : value;
  }
  return /^@[A-Za-z][A-Za-z0-9_]*$/.test(value) && value.length <= 65 ? value : undefined;
}
