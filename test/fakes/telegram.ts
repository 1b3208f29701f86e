/**
 * A loopback fake of the Telegram Bot API's `sendMessage`. It checks what the real
 * API checks, answers in its exact shapes, and records what was sent, per chat.
 *
 *     const tg = await startFakeTelegram({ token: '123456:TEST-token', chats: [4242, '@news'] });
 *     // config: channels.telegram = { botToken: '123456:TEST-token', apiBaseUrl: tg.url }
 *     expect(tg.messagesFor(4242).map((m) => m.text)).toEqual(['hello']);
 *     tg.failNext(2, 'rate_limit', { retryAfter: 3 });   // the next 2 calls get 429
 *     await tg.close();
 *
 * Checks, in the real API's order: path `/bot<token>/<method>` (else 404 Not Found);
 * the token is one it knows (else 401 Unauthorized); the method is `sendMessage`
 * (case-insensitive, like Telegram; else 404); parameters from the query string and
 * a JSON or form (urlencoded) body; `chat_id` present ("chat_id is empty") and known
 * ("chat not found", by numeric id, numeric string, or `@username`); `text` not empty
 * after trimming ("message text is empty") and at most 4096 UTF-16 units ("message is
 * too long"); a chat with `blocked: true` answers 403 "bot was blocked by the user".
 * With `parse_mode: "HTML"` the markup is parsed as Telegram does (telegram-html.ts):
 * malformed or unsupported markup answers 400 "can't parse entities: …", and the
 * recorded `text` is the visible text, with its `entities`. With or without a parse mode,
 * addresses in the visible text become `url` entities, as Telegram detects them in every
 * message (`withDetectedUrls`: any host after a scheme, else a name ending in a common TLD). A `message_thread_id`
 * must be one of the chat's `topics` ("message thread not found").
 * Like Telegram, GET is accepted as well as POST; `requests` records the method used.
 *
 * `getMe` (`agentgate doctor`'s probe) answers the bot, behind the same token check.
 */

import {
  bodyParams,
  dropConnection,
  FailureQueue,
  readBody,
  sendBadGateway,
  sendJson,
  startServer,
} from './support.js';
import { parseTelegramHtml, type TelegramEntity } from './telegram-html.js';

export interface FakeTelegramChatSpec {
  id: number;
  /** private (positive ids), group, supergroup or channel (`-100…` ids). */
  type?: 'private' | 'group' | 'supergroup' | 'channel';
  /** Lets `@username` address the chat. */
  username?: string;
  title?: string;
  /** The user blocked the bot: sending answers 403. */
  blocked?: boolean;
  /** Forum topics (`message_thread_id`) of a supergroup; any other thread id is "message thread not found". */
  topics?: number[];
}

/** A number is a chat id; `@name` a channel with that username; or a full spec. */
export type FakeTelegramChat = number | string | FakeTelegramChatSpec;

export interface FakeTelegramOptions {
  /** The bot token it accepts; `tokens` adds more bots. */
  token: string;
  tokens?: string[];
  chats?: FakeTelegramChat[];
}

export interface FakeTelegramMessage {
  /** The resolved numeric chat id (also for messages addressed by `@username`). */
  chatId: number;
  /** `chat_id` exactly as the client sent it (number or string). */
  sentChatId: unknown;
  messageId: number;
  /** The text as Telegram stores it: with `parse_mode: "HTML"`, the markup parsed away. */
  text: string;
  /** Formatting entities parsed from the HTML (empty without a parse mode). */
  entities: TelegramEntity[];
  /** `message_thread_id`, for a message in a forum topic. */
  threadId?: number;
  date: number;
  /** Every parameter the client sent. */
  params: Record<string, unknown>;
}

export interface FakeTelegramRequest {
  method: string;
  /** Path with the token replaced by `<token>` (so assertions can print it safely). */
  path: string;
  contentType: string | undefined;
  params: Record<string, unknown>;
  status: number;
  /** The W3C `traceparent` the request carried (tracing tests), if any. */
  traceparent?: string;
}

/**
 * Injected failures: `rate_limit` 429 with `parameters.retry_after`, `server_error`
 * 500, `bad_gateway` 502 with an HTML body (what a proxy in front says), `blocked`
 * 403, `network` (the connection is dropped without an answer), `parse_entities`
 * (400 "can't parse entities", for a call that has a `parse_mode`; others pass).
 */
export type FakeTelegramFailure =
  | 'rate_limit'
  | 'server_error'
  | 'bad_gateway'
  | 'blocked'
  | 'network'
  | 'parse_entities';

export interface FakeTelegram {
  /** Use as `channels.telegram.apiBaseUrl`, e.g. `http://127.0.0.1:PORT`. */
  url: string;
  /** Every delivered message, in order. */
  messages: FakeTelegramMessage[];
  /** Delivered messages of one chat, by numeric id or `@username`. */
  messagesFor(chat: number | string): FakeTelegramMessage[];
  /** Every request that reached the API (token-shaped paths redacted), failures included. */
  requests: FakeTelegramRequest[];
  /**
   * The next `count` authorised calls fail as `kind` (default `rate_limit`, `retryAfter`
   * 1 s); with `after`, that many calls succeed first (to fail the middle of a split).
   */
  failNext(
    count: number,
    kind?: FakeTelegramFailure,
    options?: { retryAfter?: number; after?: number },
  ): void;
  /** Adds a chat the bot can reach. */
  addChat(chat: FakeTelegramChat): void;
  /** Forgets the messages and requests recorded so far and the failures still queued; what the fake knows (recipients, chats, tokens) stays, so one fake serves several tests. */
  reset(): void;
  close(): Promise<void>;
}

export const FAKE_TELEGRAM_TEXT_LIMIT = 4096;
const BOT = { id: 7000001, is_bot: true, first_name: 'Fake Bot', username: 'fake_agentgate_bot' };

export async function startFakeTelegram(options: FakeTelegramOptions): Promise<FakeTelegram> {
  const tokens = new Set([options.token, ...(options.tokens ?? [])]);
  const chats = new Map<number, FakeTelegramChatSpec>();
  const usernames = new Map<string, number>();
  const messages: FakeTelegramMessage[] = [];
  const requests: FakeTelegramRequest[] = [];
  const nextMessageId = new Map<number, number>();
  const failures = new FailureQueue<FakeTelegramFailure>(1);
  let channelIds = -1001000000001;

  function addChat(chat: FakeTelegramChat): void {
    const spec: FakeTelegramChatSpec =
      typeof chat === 'number'
        ? { id: chat }
        : typeof chat === 'string'
          ? { id: channelIds--, type: 'channel', username: chat.replace(/^@/, '') }
          : chat;
    chats.set(spec.id, spec);
    if (spec.username) usernames.set(spec.username.toLowerCase(), spec.id);
  }
  for (const chat of options.chats ?? []) addChat(chat);

  function resolveChat(value: unknown): FakeTelegramChatSpec | undefined {
    if (typeof value === 'number' && Number.isInteger(value)) return chats.get(value);
    if (typeof value !== 'string') return undefined;
    const trimmed = value.trim();
    if (/^-?\d+$/.test(trimmed)) return chats.get(Number(trimmed));
    if (trimmed.startsWith('@')) {
      const id = usernames.get(trimmed.slice(1).toLowerCase());
      return id === undefined ? undefined : chats.get(id);
    }
    return undefined;
  }

  const server = await startServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const route = /^\/bot([^/]*)\/([^/]+)$/.exec(url.pathname);
    const body = await readBody(req);
    const contentType = req.headers['content-type'];
    // JSON or urlencoded, like the real API (which also takes multipart; clients here do not send it).
    const params = { ...Object.fromEntries(url.searchParams), ...bodyParams(body, contentType) };
    const record: FakeTelegramRequest = {
      method: req.method ?? '',
      path: url.pathname.replace(/^\/bot[^/]*/, '/bot<token>'),
      contentType,
      params,
      status: 0,
      ...(typeof req.headers.traceparent === 'string' ? { traceparent: req.headers.traceparent } : {}),
    };
    requests.push(record);
    const answer = (status: number, body: unknown) => {
      record.status = status;
      sendJson(res, status, body);
    };
    const fail = (status: number, description: string, parameters?: Record<string, unknown>) =>
      answer(status, { ok: false, error_code: status, description, ...(parameters ? { parameters } : {}) });

    if (!route) return fail(404, 'Not Found');
    if (!tokens.has(decodeURIComponent(route[1] ?? ''))) return fail(401, 'Unauthorized');
    // getMe (`agentgate doctor`'s probe): the bot behind the token.
    if ((route[2] ?? '').toLowerCase() === 'getme') return answer(200, { ok: true, result: BOT });
    if ((route[2] ?? '').toLowerCase() !== 'sendmessage') return fail(404, 'Not Found');

    const failure = failures.next();
    if (failure?.kind === 'parse_entities' && params.parse_mode !== undefined) {
      return fail(400, 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0');
    }
    if (failure && failure.kind !== 'parse_entities') {
      switch (failure.kind) {
        case 'rate_limit':
          return fail(429, `Too Many Requests: retry after ${failure.retryAfter}`, {
            retry_after: failure.retryAfter,
          });
        case 'server_error':
          return fail(500, 'Internal Server Error');
        case 'bad_gateway':
          return sendBadGateway(res, record);
        case 'blocked':
          return fail(403, 'Forbidden: bot was blocked by the user');
        case 'network':
          return dropConnection(req, record);
      }
    }

    const chatIdParam = params.chat_id;
    if (chatIdParam === undefined || chatIdParam === '') return fail(400, 'Bad Request: chat_id is empty');
    const chat = resolveChat(chatIdParam);
    if (!chat) return fail(400, 'Bad Request: chat not found');
    const threadParam = params.message_thread_id;
    const threadId = threadParam === undefined ? undefined : Number(threadParam);
    if (threadId !== undefined && !(chat.topics ?? []).includes(threadId)) {
      return fail(400, 'Bad Request: message thread not found');
    }
    const sentText =
      typeof params.text === 'string' ? params.text : params.text === undefined ? '' : String(params.text);
    let text = sentText;
    let entities: TelegramEntity[] = [];
    if (typeof params.parse_mode === 'string' && params.parse_mode !== '') {
      if (params.parse_mode.toLowerCase() !== 'html') return fail(400, `Bad Request: unsupported parse_mode`);
      const parsed = parseTelegramHtml(sentText);
      if (!parsed.ok) return fail(400, `Bad Request: can't parse entities: ${parsed.reason}`);
      ({ text, entities } = parsed);
    }
    entities = withDetectedUrls(text, entities);
    // The limit and the emptiness check apply to the text after entities parsing.
    if (text.trim() === '') return fail(400, 'Bad Request: message text is empty');
    if (text.length > FAKE_TELEGRAM_TEXT_LIMIT) return fail(400, 'Bad Request: message is too long');
    if (chat.blocked) return fail(403, 'Forbidden: bot was blocked by the user');

    const messageId = nextMessageId.get(chat.id) ?? 1;
    nextMessageId.set(chat.id, messageId + 1);
    const date = Math.floor(Date.now() / 1000);
    messages.push({
      chatId: chat.id,
      sentChatId: chatIdParam,
      messageId,
      text,
      entities,
      ...(threadId === undefined ? {} : { threadId }),
      date,
      params,
    });
    answer(200, {
      ok: true,
      result: {
        message_id: messageId,
        // Channel posts carry the channel as sender; elsewhere the bot is `from`.
        ...(chatType(chat) === 'channel' ? { sender_chat: chatObject(chat) } : { from: BOT }),
        chat: chatObject(chat),
        date,
        text,
        ...(entities.length > 0 ? { entities } : {}),
        ...(threadId === undefined ? {} : { message_thread_id: threadId, is_topic_message: true }),
      },
    });
  });

  return {
    url: server.url,
    messages,
    messagesFor(chat) {
      const id = resolveChat(chat)?.id;
      return messages.filter((message) => message.chatId === id);
    },
    requests,
    failNext(count, kind = 'rate_limit', failOptions = {}) {
      failures.push(count, kind, failOptions);
    },
    addChat,
    reset() {
      messages.length = 0;
      requests.length = 0;
      failures.clear();
    },
    close: server.close,
  };
}

function chatType(chat: FakeTelegramChatSpec): NonNullable<FakeTelegramChatSpec['type']> {
  if (chat.type) return chat.type;
  if (chat.id > 0) return 'private';
  return String(chat.id).startsWith('-100') ? 'supergroup' : 'group';
}

function chatObject(chat: FakeTelegramChatSpec): Record<string, unknown> {
  const type = chatType(chat);
  return {
    id: chat.id,
    type,
    ...(type === 'private'
      ? { first_name: chat.title ?? 'Test User' }
      : { title: chat.title ?? `Chat ${chat.id}` }),
    ...(chat.username ? { username: chat.username } : {}),
  };
}

/** Top-level domains a bare name (no scheme) must end in to read as an address here. */
const COMMON_TLDS = 'com|org|net|io|dev|app|co|me|ai|info|xyz|link|site|online|zip|ru|de|uk|fr';
const DETECTED_URL = new RegExp(
  `(?:\\b[a-z][a-z0-9+.-]*://[^\\s/?#]+|\\b(?:[a-z0-9-]+\\.)+(?:${COMMON_TLDS})\\b)(?:[/?#][^\\s]*)?`,
  'gi',
);

/**
 * `entities` plus a `url` entity for each address Telegram would detect in `text` outside the
 * entities that already format it (a link, code), in text order.
 */
export function withDetectedUrls(text: string, entities: TelegramEntity[]): TelegramEntity[] {
  const covered = (offset: number, length: number) =>
    entities.some((e) => offset < e.offset + e.length && e.offset < offset + length);
  const detected: TelegramEntity[] = [];
  for (const match of text.matchAll(DETECTED_URL)) {
    const offset = match.index ?? 0;
    if (!covered(offset, match[0].length)) detected.push({ type: 'url', offset, length: match[0].length });
  }
  return detected.length === 0 ? entities : [...entities, ...detected].sort((a, b) => a.offset - b.offset);
}
