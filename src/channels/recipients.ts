/**
 * Recipient forms per platform, checked at the door: a `to` that cannot be
 * valid for its channel is a 400 naming the field, before anything is stored
 * (a typo should fail now, not as a failed delivery later).
 */
import type { ChannelId } from '../config/schema.js';

const E164 = /^\+[1-9]\d{6,14}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const RULES: Record<ChannelId, { test: (to: string) => boolean; expected: string }> = {
  whatsapp: {
    test: (to) => /^\+?[1-9]\d{6,14}$/.test(to),
    expected: 'a phone number in E.164 form, e.g. +15551234567',
  },
  telegram: {
    test: (to) => /^-?\d{1,20}$/.test(to) || /^@[A-Za-z][A-Za-z0-9_]{3,31}$/.test(to),
    expected: 'a numeric chat id or @channelname',
  },
  discord: { test: (to) => /^\d{15,21}$/.test(to), expected: 'a channel id (a numeric snowflake)' },
  slack: {
    test: (to) => /^[CGDUWZ][A-Z0-9]{5,}$/.test(to) || /^#[a-z0-9][a-z0-9._-]{0,79}$/.test(to),
    expected: 'a channel id like C0123456789 (or #channel-name)',
  },
  mattermost: { test: (to) => /^[a-z0-9]{26}$/.test(to), expected: 'a 26-character channel id' },
  signal: { test: (to) => E164.test(to), expected: 'a phone number in E.164 form, e.g. +15551234567' },
  imessage: {
    test: (to) => E164.test(to) || EMAIL.test(to),
    expected: 'a phone number in E.164 form or an email address',
  },
  msteams: { test: (to) => /^[0-9A-Za-z]+:\S+$/.test(to), expected: 'a conversation id like 19:…@thread.v2' },
};

/** Undefined when `to` can be valid for the channel, else what was expected. */
export function recipientProblem(channel: ChannelId, to: string): string | undefined {
  const rule = RULES[channel];
  return rule.test(to) ? undefined : `not a valid ${channel} recipient: expected ${rule.expected}`;
}
