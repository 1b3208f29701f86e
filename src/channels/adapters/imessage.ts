/**
 * iMessage delivery through a BlueBubbles server on a Mac (CONTRACT §3):
 * `POST {serverUrl}/api/v1/message/text?password={password}` with `{chatGuid,
 * tempGuid, message, method}`. BlueBubbles authenticates by that query parameter
 * (docs.bluebubbles.app, "REST API & Webhooks": `guid`, alias `password`/`token`),
 * so the request URL holds the secret: it never appears in an error, and the
 * password is scrubbed from anything the server echoes back.
 *
 * `to` is a phone number or email address; its one-to-one chat is
 * `iMessage;-;<to>`. Sending uses AppleScript (`method: "apple-script"`), which
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

export function createIMessageAdapter(
  config: NonNullable<ChannelsConfig['imessage']>,
  options: AdapterOptions = {},
): ChannelAdapter {
  const url = `${joinUrl(config.serverUrl, '/api/v1/message/text')}?password=${encodeURIComponent(config.password)}`;
  const redact = redactor(config.password, encodeURIComponent(config.password));
  // Also blank any auth parameter in a URL the server quotes, whatever encoding it used.
  const scrub = (text: string) => redact(text).replace(AUTH_PARAM, '$1[redacted]');
  return {
    id: 'imessage',
    maxMessageLength: IMESSAGE_TEXT_LIMIT,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const address = message.to.trim();
      if (address === '') throw new DeliveryError('imessage: no recipient phone number or email', true);
      checkText('imessage', message.text, IMESSAGE_TEXT_LIMIT);
      const answer = await postJson({
        platform: 'imessage',
        url,
        headers: { accept: 'application/json' },
        body: {
          chatGuid: `iMessage;-;${address}`,
          tempGuid: randomUUID(),
          message: message.text,
          method: 'apple-script',
        },
        timeoutMs: options.timeoutMs,
        fetch: options.fetch,
        signal,
      });
      return interpret(answer, scrub);
    },
  };
}

function interpret(answer: HttpAnswer, scrub: (text: string) => string): SendResult {
  const { status, json } = answer;
  const error = json?.error as { type?: unknown; message?: unknown; error?: unknown } | undefined;
  if (status >= 200 && status < 300 && json && json.status === 200 && !error) {
    const guid = (json.data as { guid?: unknown } | undefined)?.guid;
    return typeof guid === 'string' && guid !== '' ? { messageId: guid } : {};
  }

  // The docs name the detail `error.error`, the server sends `error.message`: read both.
  const detail = platformText(error?.message, scrub) ?? platformText(error?.error, scrub);
  const summary = platformText(json?.message, scrub) ?? `unexpected answer`;
  const reason = `imessage: ${summary}${detail ? `: ${detail}` : ''} (HTTP ${status})`;

  if (status === 429) throw new DeliveryError(reason, false, retryAfterMs(answer.headers.get('retry-after')));
  if (status === 401) throw new DeliveryError(`${reason}: check channels.imessage.password`, true);
  if (status === 404) {
    throw new DeliveryError(`${reason}: check channels.imessage.serverUrl and the recipient`, true);
  }
  if (status >= 500) {
    if (NO_SUCH_CHAT.test(`${detail ?? ''} ${summary}`)) {
      throw new DeliveryError(`${reason}: no iMessage chat with this recipient`, true);
    }
    // Saved with an error code: Messages tried and refused; another try would just add a failed bubble.
    const code = (json?.data as { error?: unknown } | undefined)?.error;
    if (typeof code === 'number' && code !== 0) {
      throw new DeliveryError(`${reason}: Messages reported error ${code}`, true);
    }
    throw new DeliveryError(reason, false);
  }
  // A 2xx without a JSON success body is a tunnel's page, not BlueBubbles: worth another try.
  if (status < 400 || status === 408) throw new DeliveryError(reason, false);
  // 400 (validation), 403 and any other refusal.
  throw new DeliveryError(reason, true);
}
