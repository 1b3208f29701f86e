/**
 * iMessage delivery through a BlueBubbles server on a Mac (docs/platforms.md):
 * `POST {serverUrl}/api/v1/message/text?password={password}` with `{chatGuid,
 * tempGuid, message, method}`. BlueBubbles authenticates by that query parameter
 * (docs.bluebubbles.app, "REST API & Webhooks": `guid`, alias `password`/`token`),
 * so the request URL holds the secret: it never appears in an error, and the
 * password is scrubbed from anything the server echoes back.
 *
 * `to` is a phone number or email address, whose one-to-one chat is
 * `iMessage;-;<to>`, or `chat:<chatGuid>`, an existing (group) chat by its
 * GUID (`iMessage;+;chat…`). Replies are plain text: Messages shows no markup. Sending uses AppleScript (`method: "apple-script"`), which
 * works without BlueBubbles' Private API and requires a `tempGuid`; a fresh one
 * per call, so BlueBubbles' duplicate guard never refuses a retry.
 *
 * Answers are `{status, message, data}`, errors `{status, message, error:{type,
 * message}}` (server/api/http/api/v1/responses/errors.ts). Mapped: 401 (wrong
 * password), 403, 400 (validation) and 404 are permanent; a 500 "iMessage Error"
 * saying Messages cannot find the chat or buddy (AppleScript error -1728), or
 * reporting that the message was saved with an error code, is permanent; other
 * 5xx, 408 and 429 (BlueBubbles has no rate limit, but a tunnel in front of it
 * may) are retryable.
 */
import { randomUUID } from 'node:crypto';
import { joinUrl, type OutboundResponse, retryAfterMs } from '../../../http/outbound.js';
import { checkText, platformText, recipientOf } from '../../kit/support.js';
import { type Platform, permanent, sent, temporary, type Verdict } from '../../kit/types.js';
import type { IMessageConfig } from './config.js';
import { imessageRecipients } from './recipients.js';

/**
 * iMessage publishes no text limit, and Messages takes far longer texts than
 * anyone reads on a phone. 20000 characters keeps one AppleScript call (the
 * text is embedded in the script BlueBubbles runs) and one bubble reasonable;
 * the delivery engine splits longer replies.
 */
export const IMESSAGE_TEXT_LIMIT = 20_000;

/** Messages' way of saying there is no such chat or buddy (AppleScript -1728, "Can’t get …"). */
const NO_SUCH_CHAT = /can['’]t get (chat|buddy|participant|account)|-1728|chat (does not exist|not found)/i;

/** BlueBubbles' password query parameter and its aliases, up to the next separator. */
const AUTH_PARAM = /([?&](?:password|guid|token)=)[^&#\s"'<>]*/gi;

export function imessagePlatform(config: IMessageConfig): Platform {
  const url = `${joinUrl(config.serverUrl, '/api/v1/message/text')}?password=${encodeURIComponent(config.password)}`;
  return {
    secrets: [config.password, encodeURIComponent(config.password)],
    // Also blank any auth parameter in a URL the server quotes, whatever encoding it used.
    redact: (text) => text.replace(AUTH_PARAM, '$1[redacted]'),
    buildRequest(message) {
      const recipient = recipientOf('imessage', imessageRecipients, message.to);
      checkText('imessage', message.text, IMESSAGE_TEXT_LIMIT);
      return {
        url,
        headers: { accept: 'application/json' },
        json: {
          // A one-to-one chat is `iMessage;-;<address>`; a group chat is named by its own GUID.
          chatGuid: recipient.kind === 'chat' ? recipient.chatGuid : `iMessage;-;${recipient.address}`,
          tempGuid: randomUUID(),
          message: message.text,
          method: 'apple-script',
        },
      };
    },
    interpret,
  };
}

function interpret(answer: OutboundResponse, scrub: (text: string) => string): Verdict {
  const { status, json } = answer;
  const error = json?.error as { type?: unknown; message?: unknown; error?: unknown } | undefined;
  if (status >= 200 && status < 300 && json && json.status === 200 && !error) {
    return sent((json.data as { guid?: unknown } | undefined)?.guid);
  }

  // The docs name the detail `error.error`, the server sends `error.message`: read both.
  const detail = platformText(error?.message, scrub) ?? platformText(error?.error, scrub);
  const summary = platformText(json?.message, scrub) ?? `unexpected answer`;
  const reason = `imessage: ${summary}${detail ? `: ${detail}` : ''} (HTTP ${status})`;

  if (status === 429) return temporary(reason, retryAfterMs([answer.headers.get('retry-after')]));
  if (status === 401) return permanent(`${reason}: check channels.imessage.password`);
  if (status === 404) return permanent(`${reason}: check channels.imessage.serverUrl and the recipient`);
  if (status >= 500) {
    if (NO_SUCH_CHAT.test(`${detail ?? ''} ${summary}`)) {
      return permanent(`${reason}: no iMessage chat with this recipient`);
    }
    // Saved with an error code: Messages tried and refused; another try would just add a failed bubble.
    const code = (json?.data as { error?: unknown } | undefined)?.error;
    if (typeof code === 'number' && code !== 0)
      return permanent(`${reason}: Messages reported error ${code}`);
    return temporary(reason);
  }
  // A 2xx without a JSON success body is a tunnel's page, not BlueBubbles: worth another try.
  if (status < 400 || status === 408) return temporary(reason);
  // 400 (validation), 403 and any other refusal.
  return permanent(reason);
}
