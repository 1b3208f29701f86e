/**
 * Telegram delivery through the Bot API's `sendMessage` (CONTRACT §3:
 * `POST {apiBaseUrl}/bot{botToken}/sendMessage` with `{chat_id, text}`).
 *
 * Answers are `{ok:true, result:{message_id, ...}}` or `{ok:false, error_code,
 * description, parameters?:{retry_after, migrate_to_chat_id}}`. Mapped to
 * DeliveryError: 429 → retry after `retry_after` s; 5xx, timeouts and network
 * failures → retryable; other 4xx (chat not found, bad token, bot blocked) →
 * permanent. The request URL holds the bot token, so it never appears in an
 * error, and the token is scrubbed from anything Telegram sends back too.
 */
import type { ChannelAdapter, OutboundMessage, SendResult } from '../types.js';
import { DeliveryError } from '../types.js';

/** Telegram's limit for one message's text. */
export const TELEGRAM_TEXT_LIMIT = 4096;
const DEFAULT_TIMEOUT_MS = 30_000;

export interface TelegramAdapterOptions {
  botToken: string;
  /** e.g. https://api.telegram.org (a fake on loopback in tests). */
  apiBaseUrl: string;
  /** Time limit for one request; default 30 s. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** The parts of a Bot API answer this adapter reads. */
interface BotApiAnswer {
  ok?: unknown;
  result?: { message_id?: unknown };
  error_code?: unknown;
  description?: unknown;
  parameters?: { retry_after?: unknown; migrate_to_chat_id?: unknown };
}

export function createTelegramAdapter(options: TelegramAdapterOptions): ChannelAdapter {
  const endpoint = `${options.apiBaseUrl.replace(/\/+$/, '')}/bot${options.botToken}/sendMessage`;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const fetchImpl = options.fetch ?? fetch;
  const scrub = scrubber(options.botToken);

  async function sendOne(
    chatId: number | string,
    text: string,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const timeout = AbortSignal.timeout(timeoutMs);
    let status: number;
    let retryAfterHeader: string | null;
    let raw: string;
    try {
      const response = await fetchImpl(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chat_id: chatId, text }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      status = response.status;
      retryAfterHeader = response.headers.get('retry-after');
      raw = await response.text();
    } catch (error) {
      // The caller's own abort (shutdown, run timeout) is theirs to interpret.
      if (signal?.aborted) throw signal.reason;
      if (timeout.aborted) throw new DeliveryError(`telegram: no answer within ${timeoutMs / 1000} s`, false);
      // Only the error code (ECONNREFUSED, ENOTFOUND, ...): messages may quote the URL.
      throw new DeliveryError(`telegram: request failed (${networkCode(error)})`, false);
    }
    return interpret(status, retryAfterHeader, raw, scrub);
  }

  return {
    id: 'telegram',
    maxMessageLength: TELEGRAM_TEXT_LIMIT,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const chatId = telegramChatId(message.to);
      // Telegram drops surrounding whitespace and refuses what is left empty.
      const parts = splitText(message.text, TELEGRAM_TEXT_LIMIT).filter((part) => part.trim() !== '');
      if (parts.length === 0) throw new DeliveryError('telegram: message text is empty', true);
      let messageId: string | undefined;
      for (const [index, part] of parts.entries()) {
        try {
          messageId = await sendOne(chatId, part, signal);
        } catch (error) {
          // Say how far it got: a retry of the whole message repeats the parts already sent.
          if (index > 0 && error instanceof DeliveryError) {
            throw new DeliveryError(
              `${error.message} (after ${index} of ${parts.length} parts were sent)`,
              error.permanent,
              error.retryAfterMs,
            );
          }
          throw error;
        }
      }
      return messageId === undefined ? {} : { messageId };
    },
  };
}

/**
 * Telegram's `chat_id`: an integer for numeric ids (users, groups, `-100…`
 * supergroups and channels), else the string as given (`@channelusername`).
 */
export function telegramChatId(to: string): number | string {
  const trimmed = to.trim();
  if (trimmed === '') throw new DeliveryError('telegram: no recipient chat id', true);
  if (/^-?\d+$/.test(trimmed)) {
    const id = Number(trimmed);
    if (Number.isSafeInteger(id)) return id;
  }
  return trimmed;
}

/**
 * Cuts text into pieces of at most `limit` UTF-16 units, in order, never between
 * the two halves of a surrogate pair. Naive on purpose (no word or line
 * boundaries) until a shared splitting engine exists.
 */
export function splitText(text: string, limit: number): string[] {
  const parts: string[] = [];
  let start = 0;
  while (text.length - start > limit) {
    let end = start + limit;
    const last = text.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff) end -= 1;
    parts.push(text.slice(start, end));
    start = end;
  }
  parts.push(text.slice(start));
  return parts;
}

function interpret(
  status: number,
  retryAfterHeader: string | null,
  raw: string,
  scrub: (text: string) => string,
): string | undefined {
  let answer: BotApiAnswer | undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed && typeof parsed === 'object') answer = parsed as BotApiAnswer;
  } catch {
    answer = undefined;
  }
  if (status >= 200 && status < 300 && answer?.ok === true) {
    const id = answer.result?.message_id;
    return typeof id === 'number' || typeof id === 'string' ? String(id) : undefined;
  }

  // Telegram's error_code mirrors the HTTP status; prefer it when the two differ.
  const code = typeof answer?.error_code === 'number' ? answer.error_code : status;
  const description =
    typeof answer?.description === 'string' && answer.description !== ''
      ? scrub(answer.description).slice(0, 300)
      : `unexpected answer (HTTP ${status})`;
  const reason = `telegram: ${description} (error ${code})`;

  if (code === 429) {
    const seconds = retrySeconds(answer?.parameters?.retry_after) ?? retrySeconds(retryAfterHeader);
    throw new DeliveryError(reason, false, seconds === undefined ? undefined : Math.ceil(seconds * 1000));
  }
  // A 2xx without `ok: true` is a broken answer (a proxy?), not a refusal: worth another try.
  if (code < 400 || code >= 500 || code === 408 || code === 425) {
    throw new DeliveryError(reason, false);
  }
  const migratedTo = answer?.parameters?.migrate_to_chat_id;
  if (typeof migratedTo === 'number') {
    throw new DeliveryError(
      `telegram: the group became a supergroup; send to its new chat id ${migratedTo} (error ${code})`,
      true,
    );
  }
  if (code === 401) {
    throw new DeliveryError(`${reason}: check channels.telegram.botToken`, true);
  }
  // 400 (chat not found, bad parameters), 403 (bot blocked or kicked), 404 (no such method or token).
  throw new DeliveryError(reason, true);
}

function retrySeconds(value: unknown): number | undefined {
  const seconds = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

function networkCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? code : 'network error';
}

/** Removes the bot token, and its secret half on its own, from text that is about to be shown. */
function scrubber(token: string): (text: string) => string {
  const secrets = [token];
  const secretHalf = token.slice(token.indexOf(':') + 1);
  if (secretHalf !== token && secretHalf.length >= 8) secrets.push(secretHalf);
  return (text) => secrets.reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}
