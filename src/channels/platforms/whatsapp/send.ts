/**
 * WhatsApp delivery through Meta's Cloud API (docs/platforms.md:
 * `POST {apiBaseUrl}/{phoneNumberId}/messages`, `Authorization: Bearer {accessToken}`)
 * with a free-form text message:
 *   {messaging_product:"whatsapp", recipient_type:"individual", to, type:"text",
 *    text:{preview_url:false, body}}
 * Success: `{messaging_product, contacts:[{input, wa_id}], messages:[{id}]}`.
 * Failure (Graph API): `{error:{message, type, code, error_subcode?, error_data?:{details}, fbtrace_id}}`.
 *
 * Meta asks clients to branch on `error.code`, not on titles or HTTP status, so:
 * rate limits (HTTP 429 or codes 4, 80007, 130429, 131048, 131056) → retryable
 * after a delay; 5xx, Meta's transient codes, timeouts and network failures →
 * retryable; a refused token (190, HTTP 401) or recipient (100, 131026, 131030)
 * and every other 4xx → permanent. The token is scrubbed from anything shown:
 * Graph echoes malformed tokens back in its error message.
 *
 * `to` is an E.164 number, with or without `+` (as written by people: spaces,
 * dashes, parentheses). Replies are sent in WhatsApp's formatting (format/whatsapp.ts).
 */

import { joinUrl, type OutboundResponse, retryAfterMs } from '../../../http/outbound.js';
import { checkText, platformText, recipientOf } from '../../kit/support.js';
import { type Platform, permanent, sent, temporary, type Verdict } from '../../kit/types.js';
import type { WhatsAppConfig } from './config.js';
import { whatsappRecipients } from './recipients.js';

/** The Cloud API's limit for `text.body`. */
export const WHATSAPP_TEXT_LIMIT = 4096;

/**
 * Graph codes that mean "slow down", with how long to wait when no Retry-After
 * header says (Graph rarely sends one).
 */
const RATE_LIMIT_WAIT_MS = new Map<number, number>([
  [4, 60_000], // the app's call rate limit (a rolling one-hour window)
  [80007, 60_000], // the WhatsApp Business Account's rate limit
  [130429, 1_000], // Cloud API throughput (messages per second) reached
  [131048, 60_000], // spam rate limit: too many of this number's messages were blocked or flagged
  [131056, 6_000], // pair rate limit: about one message every 6 s to the same user
]);
const DEFAULT_RATE_LIMIT_WAIT_MS = 60_000;

/** Codes Meta documents as temporary (service down, unknown server-side failure). */
const TRANSIENT_CODES = new Set([2, 131000, 131016, 133004]);
/** Invalid parameter (often the number), undeliverable, not in the test-number allow list. */
const RECIPIENT_CODES = new Set([100, 131026, 131030]);

interface GraphError {
  message?: unknown;
  code?: unknown;
  error_subcode?: unknown;
  error_data?: { details?: unknown };
}

export function whatsappPlatform(config: WhatsAppConfig): Platform {
  const url = joinUrl(config.apiBaseUrl, `${encodeURIComponent(config.phoneNumberId)}/messages`);
  return {
    secrets: [config.accessToken],
    buildRequest(message) {
      const to = whatsappRecipient(message.to);
      checkText('whatsapp', message.text, WHATSAPP_TEXT_LIMIT);
      return {
        url,
        headers: { authorization: `Bearer ${config.accessToken}` },
        json: {
          messaging_product: 'whatsapp',
          recipient_type: 'individual',
          to,
          type: 'text',
          // No link preview: a reply quoting a URL must not make Meta fetch it.
          text: { preview_url: false, body: message.text },
        },
      };
    },
    interpret,
  };
}

/**
 * The Cloud API's `to`: the E.164 number's digits without `+` (spaces, dashes,
 * dots and parentheses as people write numbers are dropped).
 */
export function whatsappRecipient(to: string): string {
  return recipientOf('whatsapp', whatsappRecipients, to).number;
}

function interpret(answer: OutboundResponse, scrub: (text: string) => string): Verdict {
  const { status, json } = answer;
  const error = json?.error && typeof json.error === 'object' ? (json.error as GraphError) : undefined;
  if (status >= 200 && status < 300 && json && !error) {
    return sent((json.messages as { id?: unknown }[] | undefined)?.[0]?.id);
  }

  const code = typeof error?.code === 'number' ? error.code : undefined;
  const subcode = typeof error?.error_subcode === 'number' ? `/${error.error_subcode}` : '';
  const text = platformText(error?.message, scrub) ?? `unexpected answer (HTTP ${status})`;
  const details = platformText(error?.error_data?.details, scrub);
  const reason = `whatsapp: ${text}${details && details !== text ? ` — ${details}` : ''}${
    code === undefined ? '' : ` (error ${code}${subcode})`
  }`;

  if (status === 429 || (code !== undefined && RATE_LIMIT_WAIT_MS.has(code))) {
    const wait =
      retryAfterMs([answer.headers.get('retry-after')]) ??
      (code === undefined ? undefined : RATE_LIMIT_WAIT_MS.get(code)) ??
      DEFAULT_RATE_LIMIT_WAIT_MS;
    return temporary(reason, wait);
  }
  // A 2xx that is not the documented answer (a proxy?) was not a refusal: worth another try.
  if (status < 400 || status >= 500 || status === 408 || (code !== undefined && TRANSIENT_CODES.has(code))) {
    return temporary(reason);
  }
  if (status === 401 || code === 190) return permanent(`${reason}: check channels.whatsapp.accessToken`);
  // Subcode 33: the object in the path (the sender's phone number id) does not exist.
  if (code === 100 && error?.error_subcode === 33) {
    return permanent(`${reason}: check channels.whatsapp.phoneNumberId`);
  }
  if (code !== undefined && RECIPIENT_CODES.has(code)) {
    return permanent(`${reason}: check the recipient number`);
  }
  // Permissions (10, 200-299), policy blocks (368), outside the 24-hour window (131047), ...
  return permanent(reason);
}
