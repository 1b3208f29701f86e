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
import type { AdapterOptions, ChannelAdapter, OutboundMessage, SendResult } from '../types.js';
import { DeliveryError } from '../types.js';
import {
  checkText,
  type HttpAnswer,
  joinUrl,
  platformText,
  postJson,
  redactor,
  retryAfterMs,
} from './http.js';

/** Discord's limit for a message's `content`. */
export const DISCORD_TEXT_LIMIT = 2000;
/** Discord asks bots to name themselves as `DiscordBot ($url, $versionNumber)`. */
const USER_AGENT = 'DiscordBot (agentgate, 0.1.0)';

export function createDiscordAdapter(
  config: NonNullable<ChannelsConfig['discord']>,
  options: AdapterOptions = {},
): ChannelAdapter {
  const scrub = redactor(config.botToken);

  return {
    id: 'discord',
    maxMessageLength: DISCORD_TEXT_LIMIT,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const channelId = discordChannelId(message.to);
      checkText('discord', message.text, DISCORD_TEXT_LIMIT);
      const answer = await postJson({
        platform: 'discord',
        url: joinUrl(config.apiBaseUrl, `channels/${channelId}/messages`),
        headers: { authorization: `Bot ${config.botToken}`, 'user-agent': USER_AGENT },
        body: { content: message.text, allowed_mentions: { parse: [] } },
        timeoutMs: options.timeoutMs,
        fetch: options.fetch,
        signal,
      });
      return interpret(answer, scrub);
    },
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

function interpret(answer: HttpAnswer, scrub: (text: string) => string): SendResult {
  const { status, json } = answer;
  if (status >= 200 && status < 300 && typeof json?.id === 'string') return { messageId: json.id };

  const code = typeof json?.code === 'number' ? json.code : undefined;
  const text = platformText(json?.message, scrub) ?? `unexpected answer (HTTP ${status})`;
  const field = firstFieldError(json?.errors, scrub);
  const reason = `discord: ${text}${field ? ` (${field})` : ''}${
    code === undefined || code === 0 ? '' : ` (error ${code})`
  }`;

  if (status === 429) {
    // The body's value is fractional seconds, more precise than the header.
    const wait = retryAfterMs(json?.retry_after, answer.headers.get('retry-after'));
    const scope = json?.global === true ? ' (global)' : '';
    throw new DeliveryError(`${reason}${scope}`, false, wait);
  }
  // A 2xx without a message object (a proxy?) was not a refusal: worth another try.
  if (status < 400 || status >= 500 || status === 408) throw new DeliveryError(reason, false);
  if (status === 401) throw new DeliveryError(`${reason}: check channels.discord.botToken`, true);
  // 403 Missing Access/Permissions, 404 Unknown Channel, 400 Invalid Form Body, ...
  throw new DeliveryError(reason, true);
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
