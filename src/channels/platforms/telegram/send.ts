/**
 * Telegram delivery through the Bot API's `sendMessage` (docs/platforms.md:
 * `POST {apiBaseUrl}/bot{botToken}/sendMessage` with `{chat_id, text}`).
 *
 * Answers are `{ok:true, result:{message_id, ...}}` or `{ok:false, error_code,
 * description, parameters?:{retry_after, migrate_to_chat_id}}`. Mapped to
 * DeliveryError: 429 → retry after `retry_after` s; 5xx, timeouts and network
 * failures → retryable; other 4xx (chat not found, bad token, bot blocked) →
 * permanent. The request URL holds the bot token, so it never appears in an
 * error, and the token is scrubbed from anything Telegram sends back too.
 * Replies are Markdown, sent as Telegram HTML (`parse_mode: "HTML"`, format/telegram.ts)
 * and split on the formatted text; when Telegram answers 400 "can't parse
 * entities", the same part is sent once more as plain text. `to` is a chat id,
 * `@channelname` or `<chatId>:topic:<threadId>` (`message_thread_id`, a forum topic).
 * Operator notices (alerts) go without `parse_mode`, with `link_preview_options.is_disabled`.
 */

import { joinUrl, type OutboundResponse, retryAfterMs } from '../../../http/outbound.js';
import { checkText, platformText, recipientOf } from '../../kit/support.js';
import { type Platform, permanent, sent, temporary, type Verdict } from '../../kit/types.js';
import type { TelegramConfig } from './config.js';
import { telegramRecipients } from './recipients.js';

/** Telegram's limit for one message's text; the delivery engine splits longer replies. */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** The parts of a Bot API answer this adapter reads. */
interface BotApiAnswer {
  ok?: unknown;
  result?: { message_id?: unknown };
  error_code?: unknown;
  description?: unknown;
  parameters?: { retry_after?: unknown; migrate_to_chat_id?: unknown };
}

export function telegramPlatform(config: TelegramConfig): Platform {
  const endpoint = joinUrl(config.apiBaseUrl, `bot${config.botToken}/sendMessage`);
  // The token's secret half on its own, too: Telegram may quote just that.
  const secretHalf = config.botToken.slice(config.botToken.indexOf(':') + 1);
  return {
    secrets: [
      config.botToken,
      ...(secretHalf !== config.botToken && secretHalf.length >= 8 ? [secretHalf] : []),
    ],
    buildRequest(message) {
      const { chatId, threadId } = recipientOf('telegram', telegramRecipients, message.to);
      // Telegram counts the text after parsing the markup: the plain twin is never shorter.
      checkText('telegram', message.plain ?? message.text, TELEGRAM_TEXT_LIMIT);
      return {
        url: endpoint,
        json: {
          chat_id: chatId,
          ...(threadId === undefined ? {} : { message_thread_id: threadId }),
          text: message.text,
          // Only rendered parts carry a plain twin; a bare text is sent as it is.
          ...(message.plain === undefined || message.notice ? {} : { parse_mode: 'HTML' }),
          // An operator notice: plain text, and no preview of a link a sender may have put in it.
          ...(message.notice ? { link_preview_options: { is_disabled: true } } : {}),
        },
      };
    },
    interpret,
  };
}

/**
 * Telegram's `chat_id`: an integer for numeric ids (users, groups, `-100…`
 * supergroups and channels), else the string as given (`@channelusername`).
 */
export function telegramChatId(to: string): number | string {
  return recipientOf('telegram', telegramRecipients, to).chatId;
}

function interpret(answer: OutboundResponse, scrub: (text: string) => string): Verdict {
  const { status } = answer;
  const body = answer.json as BotApiAnswer | undefined;
  if (status >= 200 && status < 300 && body?.ok === true) return sent(body.result?.message_id);

  // Telegram's error_code mirrors the HTTP status; prefer it when the two differ.
  const code = typeof body?.error_code === 'number' ? body.error_code : status;
  const description = platformText(body?.description, scrub) ?? `unexpected answer (HTTP ${status})`;
  const reason = `telegram: ${description} (error ${code})`;

  if (code === 429) {
    // The body's parameters.retry_after first: Telegram's own, and always in seconds.
    return temporary(
      reason,
      retryAfterMs([body?.parameters?.retry_after, answer.headers.get('retry-after')]),
    );
  }
  // A 2xx without `ok: true` is a broken answer (a proxy?), not a refusal: worth another try.
  if (code < 400 || code >= 500 || code === 408 || code === 425) return temporary(reason);
  const migratedTo = body?.parameters?.migrate_to_chat_id;
  if (typeof migratedTo === 'number') {
    return permanent(
      `telegram: the group became a supergroup; send to its new chat id ${migratedTo} (error ${code})`,
    );
  }
  if (code === 401) return permanent(`${reason}: check channels.telegram.botToken`);
  // Our markup refused: the plain twin goes instead (sender.ts).
  if (code === 400 && /can't parse entities/i.test(description)) return { outcome: 'markup-refused', reason };
  // 400 (chat not found, bad parameters), 403 (bot blocked or kicked), 404 (no such method or token).
  return permanent(reason);
}
