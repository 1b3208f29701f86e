/**
 * Discord delivery through the REST API's Create Message (docs/platforms.md:
 * `POST {apiBaseUrl}/channels/{to}/messages`, `Authorization: Bot {botToken}`)
 * with `{content, allowed_mentions:{parse:[]}}`: an agent's reply quoting
 * "@everyone" or a role must not ping anybody.
 *
 * Success answers the message object (`id`, ...). Failures are
 * `{message, code, errors?}` (JSON error codes such as 10003 Unknown Channel,
 * 50001 Missing Access, 50035 Invalid Form Body); a rate limit is HTTP 429 with
 * `{message, retry_after (seconds, fractional), global}` and a `Retry-After`
 * header. Mapped: 429 → retryable after `retry_after`; 5xx, timeouts, network →
 * retryable; 401 (bad token), 403, 404 and other 4xx → permanent.
 *
 * `to` is a channel id, `channel:<id>`, or `user:<id>`: a direct message, sent
 * to the DM channel that `POST /users/@me/channels {recipient_id}` opens (once
 * per user; Discord answers the same channel every time). Replies are Markdown
 * as Discord renders it (format/markdown.ts: headings up to ###, tables as code).
 * Operator notices (alerts) are escaped to show as written, with `flags: SUPPRESS_EMBEDS`.
 */

import { joinUrl, type OutboundClient, type OutboundResponse, retryAfterMs } from '../../../http/outbound.js';
import { lookup } from '../../kit/sender.js';
import { checkText, platformText, recipientOf } from '../../kit/support.js';
import { DeliveryError, type Platform, permanent, sent, temporary, type Verdict } from '../../kit/types.js';
import type { DiscordConfig } from './config.js';
import { discordRecipients } from './recipients.js';

/** Discord's limit for a message's `content`. */
export const DISCORD_TEXT_LIMIT = 2000;
/** The message flag that shows no embeds (link previews) under it. */
const SUPPRESS_EMBEDS = 1 << 2;
/** Discord asks bots to name themselves as `DiscordBot ($url, $versionNumber)`. */
export const DISCORD_USER_AGENT = 'DiscordBot (agentgate, 0.1.0)';

export function discordPlatform(config: DiscordConfig): Platform {
  const headers = { authorization: `Bot ${config.botToken}`, 'user-agent': DISCORD_USER_AGENT };
  // A user's DM channel never changes: opened once per user, then reused.
  const dmChannels = new Map<string, string>();
  // Create DM: POST /users/@me/channels {recipient_id} answers the DM channel (opened or existing).
  async function openDm(userId: string, client: OutboundClient, signal?: AbortSignal): Promise<string> {
    const channel = await lookup(
      { interpret },
      client,
      { url: joinUrl(config.apiBaseUrl, 'users/@me/channels'), headers, json: { recipient_id: userId } },
      signal,
    );
    if (typeof channel.id !== 'string') {
      throw new DeliveryError('discord: opening the DM channel returned no id', false);
    }
    dmChannels.set(userId, channel.id);
    return channel.id;
  }
  return {
    secrets: [config.botToken],
    resolveRecipient(to, client, signal) {
      const recipient = recipientOf('discord', discordRecipients, to);
      if (recipient.kind === 'channel') return recipient.id;
      return dmChannels.get(recipient.id) ?? openDm(recipient.id, client, signal);
    },
    buildRequest(message) {
      const channelId = discordChannelId(message.to);
      checkText('discord', message.text, DISCORD_TEXT_LIMIT);
      return {
        url: joinUrl(config.apiBaseUrl, `channels/${channelId}/messages`),
        headers,
        json: {
          content: message.text,
          allowed_mentions: { parse: [] },
          // An operator notice: no embed of a link a sender may have put in it.
          ...(message.notice ? { flags: SUPPRESS_EMBEDS } : {}),
        },
      };
    },
    interpret,
  };
}

/** A channel (or thread, or DM channel) id: a snowflake, all digits; a `user:` form is resolved first. */
export function discordChannelId(to: string): string {
  const recipient = recipientOf('discord', discordRecipients, to);
  // Checked before it becomes part of the path, which must name one channel.
  if (recipient.kind !== 'channel') {
    throw new DeliveryError('discord: a user recipient must be resolved to its DM channel first', true);
  }
  return recipient.id;
}

function interpret(answer: OutboundResponse, scrub: (text: string) => string): Verdict {
  const { status, json } = answer;
  if (status >= 200 && status < 300 && typeof json?.id === 'string') return sent(json.id);

  const code = typeof json?.code === 'number' ? json.code : undefined;
  const text = platformText(json?.message, scrub) ?? `unexpected answer (HTTP ${status})`;
  const field = firstFieldError(json?.errors, scrub);
  const reason = `discord: ${text}${field ? ` (${field})` : ''}${
    code === undefined || code === 0 ? '' : ` (error ${code})`
  }`;

  if (status === 429) {
    // The body's value is fractional seconds, more precise than the header.
    const wait = retryAfterMs([json?.retry_after, answer.headers.get('retry-after')]);
    const scope = json?.global === true ? ' (global)' : '';
    return temporary(`${reason}${scope}`, wait);
  }
  // A 2xx without a message object (a proxy?) was not a refusal: worth another try.
  if (status < 400 || status >= 500 || status === 408) return temporary(reason);
  if (status === 401) return permanent(`${reason}: check channels.discord.botToken`);
  // 403 Missing Access/Permissions, 404 Unknown Channel, 400 Invalid Form Body, ...
  return permanent(reason);
}

/**
 * The first message of an Invalid Form Body's nested `errors`
 * (`{content:{_errors:[{code, message}]}}`), prefixed with its field path.
 */
function firstFieldError(
  errors: unknown,
  scrub: (text: string) => string,
  path: string[] = [],
): string | undefined {
  if (!errors || typeof errors !== 'object' || path.length > 5) return undefined;
  for (const [key, value] of Object.entries(errors)) {
    if (key === '_errors' && Array.isArray(value)) {
      const message = platformText((value[0] as { message?: unknown } | undefined)?.message, scrub, 200);
      if (message) return path.length > 0 ? `${path.join('.')}: ${message}` : message;
    } else {
      const found = firstFieldError(value, scrub, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}
