/**
 * Discord delivery through the REST API's Create Message (CONTRACT §3:
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
 */
import type { ChannelsConfig } from '../../config/schema.js';
import { joinUrl, type OutboundResponse, retryAfterMs } from '../../http/outbound.js';
import { createAdapter } from '../sender.js';
import {
  type AdapterOptions,
  type ChannelAdapter,
  DeliveryError,
  type Platform,
  permanent,
  sent,
  temporary,
  type Verdict,
} from '../types.js';
import { checkText, platformText } from './support.js';

/** Discord's limit for a message's `content`. */
export const DISCORD_TEXT_LIMIT = 2000;
/** Discord asks bots to name themselves as `DiscordBot ($url, $versionNumber)`. */
const USER_AGENT = 'DiscordBot (agentgate, 0.1.0)';

export function createDiscordAdapter(
  config: NonNullable<ChannelsConfig['discord']>,
  options: AdapterOptions = {},
): ChannelAdapter {
  return createAdapter(discordPlatform(config), options);
}

export function discordPlatform(config: NonNullable<ChannelsConfig['discord']>): Platform {
  return {
    id: 'discord',
    maxMessageLength: DISCORD_TEXT_LIMIT,
    secrets: [config.botToken],
    buildRequest(message) {
      const channelId = discordChannelId(message.to);
      checkText('discord', message.text, DISCORD_TEXT_LIMIT);
      return {
        url: joinUrl(config.apiBaseUrl, `channels/${channelId}/messages`),
        headers: { authorization: `Bot ${config.botToken}`, 'user-agent': USER_AGENT },
        json: { content: message.text, allowed_mentions: { parse: [] } },
      };
    },
    interpret,
  };
}

/** A channel (or thread, or DM channel) id: a snowflake, all digits. */
export function discordChannelId(to: string): string {
  const id = to.trim();
  // Checked before it becomes part of the path, which must name one channel.
  if (!/^\d{1,20}$/.test(id)) {
    throw new DeliveryError('discord: the recipient must be a channel id (a snowflake, digits only)', true);
  }
  return id;
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
