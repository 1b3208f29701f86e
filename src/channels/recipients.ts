/**
 * Every form of `to` per platform (docs/recipients.md, "Recipient forms of
 * `to`"), parsed once into a typed recipient: the ingress checks `to` at the
 * door with the same parser the adapter uses to build its request, so what is
 * accepted is what is sent.
 *
 * The door refuses only what the platform could never accept (wrong
 * characters, a form that does not exist); never a plausible id because of its
 * length, which the platforms do not promise. A recipient the platform does not
 * know is its answer to give, as a failed delivery with its reason.
 */
import type { ChannelId } from '../config/schema.js';

export type TelegramRecipient = { chatId: number | string; threadId?: number };
export type SlackRecipient =
  | { kind: 'channel'; channel: string; threadTs?: string }
  | { kind: 'user'; user: string };
export type DiscordRecipient = { kind: 'channel'; id: string } | { kind: 'user'; id: string };
export type MattermostRecipient = { kind: 'channel'; id: string } | { kind: 'user'; id: string };
export type SignalRecipient =
  | { kind: 'number'; number: string }
  | { kind: 'uuid'; uuid: string }
  | { kind: 'group'; groupId: string }
  | { kind: 'username'; username: string };
export type IMessageRecipient = { kind: 'address'; address: string } | { kind: 'chat'; chatGuid: string };
export type WhatsAppRecipient = { number: string };
export type MsTeamsRecipient = { conversationId: string };

export interface Recipients {
  telegram: TelegramRecipient;
  slack: SlackRecipient;
  discord: DiscordRecipient;
  mattermost: MattermostRecipient;
  signal: SignalRecipient;
  imessage: IMessageRecipient;
  whatsapp: WhatsAppRecipient;
  msteams: MsTeamsRecipient;
}

/** The forms each channel takes, as a 400 names them. */
export const EXPECTED: Record<ChannelId, string> = {
  telegram: 'a numeric chat id (-100… for supergroups), @channelname, or <chatId>:topic:<threadId>',
  slack:
    'a channel id (C…, G…), channel:<id>, #name or a bare name, user:<U…> or a bare U…/W… (a direct message), or <channel>:thread:<ts>',
  discord: 'a channel id (a snowflake), channel:<id>, or user:<id> (a direct message)',
  mattermost: 'a channel id, channel:<id>, or user:<id> (a direct message)',
  signal: 'a phone number in E.164 form (+15551234567), uuid:<id>, group:<base64 id>, or username:<name.01>',
  imessage: 'a phone number in E.164 form, an email address, or chat:<chatGuid>',
  whatsapp: 'a phone number in E.164 form, with or without +, e.g. +15551234567',
  msteams: 'a conversation id (19:…@thread.v2, a:…) or conversation:<id>',
};

const E164 = /^\+[1-9]\d{1,14}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DIGITS = /^\d{1,20}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Thrown by the parsers; the message says what was expected. */
export class RecipientError extends Error {
  constructor(
    readonly channel: ChannelId,
    readonly to: string,
  ) {
    super(`not a valid ${channel} recipient: expected ${EXPECTED[channel]}`);
    this.name = 'RecipientError';
  }
}

type Parser<C extends ChannelId> = (to: string) => Recipients[C] | undefined;

const telegram: Parser<'telegram'> = (to) => {
  const topic = /^(.+):topic:(\d+)$/.exec(to);
  const chat = telegramChat(topic ? (topic[1] as string) : to);
  if (chat === undefined) return undefined;
  if (!topic) return { chatId: chat };
  const threadId = Number(topic[2]);
  return Number.isSafeInteger(threadId) && threadId > 0 ? { chatId: chat, threadId } : undefined;
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

const slack: Parser<'slack'> = (to) => {
  const thread = /^(.+):thread:(\d+\.\d+)$/.exec(to);
  if (thread) {
    const channel = slackChannel(thread[1] as string);
    return channel === undefined ? undefined : { kind: 'channel', channel, threadTs: thread[2] as string };
  }
  const user = /^user:(.+)$/.exec(to);
  if (user)
    return /^[UW][A-Z0-9]+$/.test(user[1] as string) ? { kind: 'user', user: user[1] as string } : undefined;
  if (/^[UW][A-Z0-9]+$/.test(to)) return { kind: 'user', user: to };
  const channel = slackChannel(to);
  return channel === undefined ? undefined : { kind: 'channel', channel };
};

/** A channel id (`C…`, `G…`, `D…`, also as `channel:<id>`) or a channel name, `#` or not. */
function slackChannel(value: string): string | undefined {
  const prefixed = /^channel:(.+)$/.exec(value);
  if (prefixed) return /^[A-Z][A-Z0-9]+$/.test(prefixed[1] as string) ? prefixed[1] : undefined;
  if (/^[A-Z][A-Z0-9]+$/.test(value)) return /^[UW]/.test(value) ? undefined : value;
  // Names: no spaces, no ':' (it separates forms), none of Slack's control characters.
  const name = value.startsWith('#') ? value.slice(1) : value;
  return /^[^\s:#<>&,@]+$/u.test(name) && name.length <= 80 ? `#${name}` : undefined;
}

/** `channel:<id>` / `user:<id>` / a bare id, for the two platforms that share those forms. */
function prefixedId(to: string, id: RegExp): { kind: 'channel' | 'user'; id: string } | undefined {
  const match = /^(channel|user):(.+)$/.exec(to);
  const kind = (match?.[1] as 'channel' | 'user' | undefined) ?? 'channel';
  const value = match ? (match[2] as string) : to;
  return id.test(value) ? { kind, id: value } : undefined;
}

const discord: Parser<'discord'> = (to) => {
  const parsed = prefixedId(to, DIGITS);
  // A snowflake is an unsigned 64-bit integer: zero or more never names anything.
  return parsed && BigInt(parsed.id) > 0n && BigInt(parsed.id) < 2n ** 64n ? parsed : undefined;
};

// Mattermost ids are 26 lowercase base32 characters today; any length is let through.
const mattermost: Parser<'mattermost'> = (to) => prefixedId(to, /^[a-z0-9]+$/);

const signal: Parser<'signal'> = (to) => {
  if (E164.test(to)) return { kind: 'number', number: to };
  const match = /^(uuid|group|username):(.+)$/.exec(to);
  const value = match?.[2] as string;
  switch (match?.[1]) {
    case 'uuid':
      return UUID.test(value) ? { kind: 'uuid', uuid: value.toLowerCase() } : undefined;
    case 'group':
      // A group id is base64 (standard or URL-safe alphabet), as signal-cli prints it.
      return /^[A-Za-z0-9+/_-]+={0,2}$/.test(value) ? { kind: 'group', groupId: value } : undefined;
    case 'username':
      // A Signal username is a nickname and a numeric discriminator: name.01
      return /^[A-Za-z_][A-Za-z0-9_]*\.\d{2,}$/.test(value)
        ? { kind: 'username', username: value }
        : undefined;
    default:
      return undefined;
  }
};

const imessage: Parser<'imessage'> = (to) => {
  const chat = /^chat:(.+)$/.exec(to);
  // BlueBubbles' chat GUIDs are `<service>;<+ group | - one-to-one>;<identifier>`.
  if (chat)
    return /^[A-Za-z]+;[+-];\S+$/.test(chat[1] as string)
      ? { kind: 'chat', chatGuid: chat[1] as string }
      : undefined;
  return E164.test(to) || EMAIL.test(to) ? { kind: 'address', address: to } : undefined;
};

const whatsapp: Parser<'whatsapp'> = (to) => {
  // Spaces, dashes, dots and parentheses as people write numbers are dropped.
  const digits = to.replace(/[\s().-]/g, '').replace(/^\+/, '');
  return /^[1-9]\d{1,14}$/.test(digits) ? { number: digits } : undefined;
};

const msteams: Parser<'msteams'> = (to) => {
  const id = to.startsWith('conversation:') ? to.slice('conversation:'.length) : to;
  return /^[0-9A-Za-z]+:\S+$/.test(id) ? { conversationId: id } : undefined;
};

const PARSERS: { [C in ChannelId]: Parser<C> } = {
  telegram,
  slack,
  discord,
  mattermost,
  signal,
  imessage,
  whatsapp,
  msteams,
};

/** The typed recipient `to` names on `channel`; throws RecipientError when it names none. */
export function parseRecipient<C extends ChannelId>(channel: C, to: string): Recipients[C] {
  const parsed = (PARSERS[channel] as Parser<C>)(to.trim());
  if (parsed === undefined) throw new RecipientError(channel, to);
  return parsed;
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
