/** Slack's forms of `to` (docs/recipients.md): a channel, a user (a direct message), or a thread. */
import type { RecipientRules } from '../../kit/recipients.js';

export type SlackRecipient =
  | { kind: 'channel'; channel: string; threadTs?: string }
  | { kind: 'user'; user: string };

export const slackRecipients: RecipientRules<SlackRecipient> = {
  expected:
    'a channel id (C…, G…), channel:<id>, #name or a bare name, user:<U…> or a bare U…/W… (a direct message), or <channel>:thread:<ts>',
  parse(to) {
    const thread = /^(.+):thread:(\d+\.\d+)$/.exec(to);
    if (thread) {
      const channel = slackChannel(thread[1] as string);
      return channel === undefined ? undefined : { kind: 'channel', channel, threadTs: thread[2] as string };
    }
    const user = /^user:(.+)$/.exec(to);
    if (user)
      return /^[UW][A-Z0-9]+$/.test(user[1] as string)
        ? { kind: 'user', user: user[1] as string }
        : undefined;
    if (/^[UW][A-Z0-9]+$/.test(to)) return { kind: 'user', user: to };
    const channel = slackChannel(to);
    return channel === undefined ? undefined : { kind: 'channel', channel };
  },
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
