/**
 * Mattermost delivery through REST API v4 (docs/platforms.md): `POST {baseUrl}/api/v4/posts`
 * with `Authorization: Bearer {token}` (a bot or personal access token) and
 * `{channel_id, message}`. Success is 201 with the created post; its `id` is the
 * message id.
 *
 * Errors are Mattermost AppErrors, `{id, message, detailed_error, request_id,
 * status_code}`, except the rate limiter's 429, which is the plain text "limit
 * exceeded" with `Retry-After` and `X-RateLimit-Reset` headers. Mattermost's own
 * limiter (server/channels/app/ratelimit.go, from throttled) sends both as
 * seconds *to wait*, not an epoch; a proxy may send an epoch instead, so a reset
 * value that looks like one is read as one. Mapping: 429, 408 and 5xx are
 * retryable; 401 (bad token), 403 (not a member of the channel, or no such
 * channel: Mattermost checks permission before existence), 404 and 400/413
 * (invalid post, e.g. too long) are permanent.
 *
 * `to` is a channel id, `channel:<id>` or `user:<id>`: a direct message, posted
 * in the direct channel between the bot and that user (`POST
 * /api/v4/channels/direct [botUserId, userId]`, the bot's id from `GET
 * /api/v4/users/me`; both cached). Replies are Markdown, which Mattermost renders.
 * Operator notices (alerts) are escaped to show as written, with the post prop
 * `remove_link_preview: "true"` (the one the web app sets when someone removes a preview).
 */

import { joinUrl, type OutboundClient, type OutboundResponse, retryAfterMs } from '../../../http/outbound.js';
import { lookup } from '../../kit/sender.js';
import { checkText, platformText, recipientOf } from '../../kit/support.js';
import { DeliveryError, type Platform, permanent, sent, temporary, type Verdict } from '../../kit/types.js';
import type { MattermostConfig } from './config.js';
import { mattermostRecipients } from './recipients.js';

/** `model.PostMessageMaxRunesV2`: the server refuses longer posts (counted in runes, never more than UTF-16 units). */
export const MATTERMOST_TEXT_LIMIT = 16_383;

/** Above this a reset header is a Unix time, below it a number of seconds (2001-09-09 either way). */
const EPOCH_THRESHOLD_S = 1_000_000_000;

export function mattermostPlatform(config: MattermostConfig): Platform {
  const url = joinUrl(config.baseUrl, '/api/v4/posts');
  const headers = { authorization: `Bearer ${config.token}`, accept: 'application/json' };
  let botUserId: string | undefined;
  // A direct channel between two users never changes: created once per user, then reused.
  const directChannels = new Map<string, string>();
  async function openDirect(userId: string, client: OutboundClient, signal?: AbortSignal): Promise<string> {
    if (botUserId === undefined) {
      // The token's own user: one side of the direct channel.
      const me = await lookup(
        { interpret },
        client,
        { url: joinUrl(config.baseUrl, '/api/v4/users/me'), headers },
        signal,
      );
      if (typeof me.id !== 'string') throw new DeliveryError('mattermost: users/me returned no id', false);
      botUserId = me.id;
    }
    // Creates the direct channel, or answers the existing one.
    const channel = await lookup(
      { interpret },
      client,
      { url: joinUrl(config.baseUrl, '/api/v4/channels/direct'), headers, json: [botUserId, userId] },
      signal,
    );
    if (typeof channel.id !== 'string')
      throw new DeliveryError('mattermost: channels/direct returned no id', false);
    directChannels.set(userId, channel.id);
    return channel.id;
  }
  return {
    secrets: [config.token],
    resolveRecipient(to, client, signal) {
      const recipient = recipientOf('mattermost', mattermostRecipients, to);
      if (recipient.kind === 'channel') return recipient.id;
      return directChannels.get(recipient.id) ?? openDirect(recipient.id, client, signal);
    },
    buildRequest(message) {
      const recipient = recipientOf('mattermost', mattermostRecipients, message.to);
      if (recipient.kind !== 'channel') {
        throw new DeliveryError(
          'mattermost: a user recipient must be resolved to its direct channel first',
          true,
        );
      }
      checkText('mattermost', message.text, MATTERMOST_TEXT_LIMIT);
      // An operator notice: the post prop that shows no preview of a link a sender may have put in it.
      const props = message.notice ? { props: { remove_link_preview: 'true' } } : {};
      return { url, headers, json: { channel_id: recipient.id, message: message.text, ...props } };
    },
    interpret,
  };
}

function interpret(answer: OutboundResponse, scrub: (text: string) => string): Verdict {
  const { status, json } = answer;
  // A 2xx JSON answer means the post exists: never retry it, even without an id.
  if (status >= 200 && status < 300 && json) return sent(json.id);
  const text = platformText(json?.message, scrub) ?? platformText(answer.raw, scrub, 120);
  const errorId = typeof json?.id === 'string' ? `${json.id}, ` : '';
  const reason = `mattermost: ${text ?? 'unexpected answer'} (${errorId}HTTP ${status})`;

  if (status === 429) return temporary(reason, rateLimitWait(answer.headers));
  // A 2xx that is not JSON is a proxy's page, not a post: worth another try.
  if (status < 400 || status >= 500 || status === 408) return temporary(reason);
  if (status === 401) return permanent(`${reason}: check channels.mattermost.token`);
  if (status === 403) {
    return permanent(`${reason}: the bot must be a member of the channel, and the channel must exist`);
  }
  if (status === 404) return permanent(`${reason}: check channels.mattermost.baseUrl and the channel id`);
  // 400 (invalid post, e.g. a malformed channel id), 413 and any other refusal.
  return permanent(reason);
}

/** Retry-After wins; else X-RateLimit-Reset, as seconds to wait or as a Unix time. */
function rateLimitWait(headers: Headers): number | undefined {
  const retryAfter = retryAfterMs([headers.get('retry-after')]);
  if (retryAfter !== undefined) return retryAfter;
  const reset = headers.get('x-ratelimit-reset')?.trim();
  if (!reset || !/^\d+(\.\d+)?$/.test(reset)) return undefined;
  const seconds = Number(reset);
  if (seconds < EPOCH_THRESHOLD_S) return Math.ceil(seconds * 1000);
  return Math.max(0, Math.ceil(seconds * 1000 - Date.now()));
}
