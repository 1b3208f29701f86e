/**
 * Slack delivery through the Web API's `chat.postMessage` (docs/platforms.md:
 * `POST {apiBaseUrl}/chat.postMessage`, `Authorization: Bearer {botToken}`,
 * JSON `{channel, text}` sent as `application/json; charset=utf-8`, without which
 * Slack warns `missing_charset`).
 *
 * Slack answers most errors with HTTP 200 and `{ok:false, error:"<code>"}`; a
 * rate limit is HTTP 429 with a `Retry-After` header (seconds). Mapped:
 * `ratelimited`/429 → retryable after Retry-After; `internal_error`,
 * `fatal_error`, `service_unavailable`, `request_timeout`, 5xx, timeouts and
 * network failures → retryable; token, channel and text errors (and any other
 * code Slack documents: they describe the request, which a retry repeats) →
 * permanent. Success `{ok:true, channel, ts, message}`: the `ts` is the id.
 *
 * Replies are sent as mrkdwn (format/slack.ts). `to` is a channel (id,
 * `channel:<id>`, `#name` or a bare name), a user (`user:<U…>` or a bare
 * `U…`/`W…`: the app's direct message with them, by passing the user id as
 * `channel`), or `<channel>:thread:<ts>` (a reply in that thread: `thread_ts`).
 * Operator notices (alerts) go with `mrkdwn: false`, `unfurl_links: false`, `unfurl_media: false`.
 */

import { joinUrl, type OutboundResponse, retryAfterMs } from '../../../http/outbound.js';
import { checkText, platformText, recipientOf } from '../../kit/support.js';
import { type Platform, permanent, sent, temporary, type Verdict } from '../../kit/types.js';
import type { SlackConfig } from './config.js';
import { slackRecipients } from './recipients.js';

/**
 * Slack truncates `text` beyond 40,000 characters (changelog "Truncating really
 * long messages", 2018); the delivery engine splits longer replies.
 */
export const SLACK_TEXT_LIMIT = 40_000;

const RATE_LIMITED = new Set(['ratelimited', 'rate_limited']);
const TRANSIENT = new Set(['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']);
/** The token is refused: the same for every message until the configuration changes. */
export const SLACK_AUTH_ERRORS: ReadonlySet<string> = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
]);
const HINTS: Record<string, string> = {
  channel_not_found: 'no such channel, or the bot cannot see it',
  user_not_found: 'no such user',
  thread_not_found: 'no such thread in the channel',
  not_in_channel: 'invite the bot to the channel first',
  is_archived: 'the channel is archived',
  msg_too_long: 'the message text is too long',
  no_text: 'the message text is empty',
};

export function slackPlatform(config: SlackConfig): Platform {
  const url = joinUrl(config.apiBaseUrl, 'chat.postMessage');
  return {
    secrets: [config.botToken],
    buildRequest(message) {
      const recipient = recipientOf('slack', slackRecipients, message.to);
      // The limit applies to the text as written; Slack truncates (with a warning)
      // rather than refusing past 40,000.
      checkText('slack', message.text, SLACK_TEXT_LIMIT);
      // An operator notice: no mrkdwn, and no unfurl of a link a sender may have put in it.
      const notice = message.notice ? { mrkdwn: false, unfurl_links: false, unfurl_media: false } : {};
      return {
        url,
        headers: { authorization: `Bearer ${config.botToken}` },
        contentType: 'application/json; charset=utf-8',
        json:
          recipient.kind === 'user'
            ? // A user id as the channel: Slack posts in the app's direct message with that user.
              { channel: recipient.user, text: message.text, ...notice }
            : {
                channel: recipient.channel,
                text: message.text,
                ...(recipient.threadTs === undefined ? {} : { thread_ts: recipient.threadTs }),
                ...notice,
              },
      };
    },
    interpret,
  };
}

function interpret(answer: OutboundResponse, scrub: (text: string) => string): Verdict {
  const { status, json } = answer;
  // Slack answers most refusals with HTTP 200: the body decides, not the status.
  if (status >= 200 && status < 300 && json?.ok === true) return sent(json.ts);

  const error = platformText(json?.error, scrub, 100);
  const retryAfter = retryAfterMs([answer.headers.get('retry-after')]);
  if (status === 429 || (error !== undefined && RATE_LIMITED.has(error))) {
    return temporary(`slack: ${error ?? 'ratelimited'} (HTTP ${status})`, retryAfter);
  }
  if (error === undefined || status >= 500 || TRANSIENT.has(error)) {
    // No Slack error code (a proxy's page, a broken answer) or a server-side failure: try again.
    return temporary(`slack: ${error ?? 'unexpected answer'} (HTTP ${status})`);
  }
  if (SLACK_AUTH_ERRORS.has(error)) return permanent(`slack: ${error}: check channels.slack.botToken`);
  if (error === 'missing_scope') {
    const needed = platformText(json?.needed, scrub, 100);
    return permanent(`slack: missing_scope: the app needs the ${needed ?? 'chat:write'} scope`);
  }
  const hint = HINTS[error];
  return permanent(`slack: ${error}${hint ? `: ${hint}` : ''}`);
}
