/**
 * A loopback fake of Discord's REST Create Message endpoint. It checks what the
 * real API checks, answers in its shapes, and records what was sent, per channel.
 *
 *     const dc = await startFakeDiscord({ token: 'MTIz.fake.token', channels: ['123456789012345678'] });
 *     // config: channels.discord = { botToken: 'MTIz.fake.token', apiBaseUrl: dc.url }  (ends in /api/v10)
 *     expect(dc.messagesFor('123456789012345678').map((m) => m.content)).toEqual(['hello']);
 *     dc.failNext(1, 'rate_limit', { retryAfter: 1.5 });   // next call: 429, retry_after 1.5
 *     await dc.close();
 *
 * Checks, in Discord's order: path `/api/v10/channels/<id>/messages` (else 404
 * `{"message":"404: Not Found","code":0}`); method POST (else 405); `Authorization:
 * Bot <known token>` (else 401 `{"message":"401: Unauthorized","code":0}`); the id
 * is a snowflake (else 400 Invalid Form Body, code 50035, `NUMBER_TYPE_COERCE`);
 * the channel exists (else 404 Unknown Channel, code 10003); the bot can see it
 * (`access: false` → 403 Missing Access, 50001) and send there (`canSend: false` →
 * 403 Missing Permissions, 50013); a JSON body with non-empty `content` (else 400
 * "Cannot send an empty message", 50006) of at most 2000 characters (else 400,
 * 50035 `BASE_TYPE_MAX_LENGTH`), and `flags` only SUPPRESS_EMBEDS and SUPPRESS_NOTIFICATIONS (else
 * 400, 50035). Answers 200 with a message object, its `flags` as sent.
 *
 * Injected failures (`failNext`): `rate_limit` (429 with body `{message,
 * retry_after, global:false}` and headers `Retry-After` (whole seconds, rounded up)
 * and `X-RateLimit-Scope: user`), `global_rate_limit` (the same with `global:true`),
 * `server_error` (500 `{"message":"500: Internal Server Error","code":0}`),
 * `bad_gateway` (502, Cloudflare-style HTML), `network` (connection dropped).
 *
 * Direct messages: `POST /users/@me/channels {recipient_id}` opens (once) and
 * answers the DM channel of a user listed in `users`; another user is 400
 * Invalid Recipient(s), 50033. Messages to it are read with `dmMessagesFor`.
 *
 * `GET /users/@me` (`agentgate doctor`'s probe) answers the bot user, behind the same token check.
 */
import {
  dropConnection,
  FailureQueue,
  jsonObject,
  readBody,
  redact,
  sendBadGateway,
  sendJson,
  startServer,
} from './support.js';

export interface FakeDiscordChannelSpec {
  id: string;
  /** The bot cannot see the channel: 403 Missing Access. */
  access?: boolean;
  /** The bot sees it but lacks Send Messages: 403 Missing Permissions. */
  canSend?: boolean;
}

export interface FakeDiscordOptions {
  token: string;
  /** Channel ids, or specs. */
  channels?: (string | FakeDiscordChannelSpec)[];
  /** User ids the bot can open a DM with (`POST /users/@me/channels`); others are Invalid Recipient(s). */
  users?: string[];
}

export interface FakeDiscordMessage {
  channelId: string;
  id: string;
  content: string;
  /** The whole JSON body the client sent (`allowed_mentions` included). */
  payload: Record<string, unknown>;
}

export interface FakeDiscordRequest {
  method: string;
  path: string;
  /** Authorization with the known token replaced by `<token>`. */
  authorization: string | undefined;
  userAgent: string | undefined;
  contentType: string | undefined;
  payload: Record<string, unknown> | undefined;
  status: number;
}

export type FakeDiscordFailure =
  | 'rate_limit'
  | 'global_rate_limit'
  | 'server_error'
  | 'bad_gateway'
  | 'network';

export interface FakeDiscord {
  /** Use as `channels.discord.apiBaseUrl`, e.g. `http://127.0.0.1:PORT/api/v10`. */
  url: string;
  messages: FakeDiscordMessage[];
  messagesFor(channelId: string): FakeDiscordMessage[];
  /** Messages in the DM channel opened with a user (none when no DM was opened). */
  dmMessagesFor(userId: string): FakeDiscordMessage[];
  requests: FakeDiscordRequest[];
  /** The next `count` authorised calls fail as `kind` (default `rate_limit`, `retryAfter` 0.5 s). */
  failNext(count: number, kind?: FakeDiscordFailure, options?: { retryAfter?: number }): void;
  addChannel(channel: string | FakeDiscordChannelSpec): void;
  /** Forgets the messages and requests recorded so far and the failures still queued; what the fake knows (recipients, chats, tokens) stays, so one fake serves several tests. */
  reset(): void;
  close(): Promise<void>;
}

export const FAKE_DISCORD_TEXT_LIMIT = 2000;
/** The message flags a bot may set when it creates a message: SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS. */
const SETTABLE_FLAGS = (1 << 2) | (1 << 12);
const BOT_USER = { id: '1100000000000000001', username: 'agentgate', discriminator: '0', bot: true };

export async function startFakeDiscord(options: FakeDiscordOptions): Promise<FakeDiscord> {
  const channels = new Map<string, FakeDiscordChannelSpec>();
  const addChannel = (channel: string | FakeDiscordChannelSpec) => {
    const spec = typeof channel === 'string' ? { id: channel } : channel;
    channels.set(spec.id, spec);
  };
  for (const channel of options.channels ?? []) addChannel(channel);
  const users = new Set(options.users ?? []);
  /** Each user's DM channel, opened on first request and the same ever after. */
  const dmChannels = new Map<string, string>();
  const messages: FakeDiscordMessage[] = [];
  const requests: FakeDiscordRequest[] = [];
  const failures = new FailureQueue<FakeDiscordFailure>(0.5);
  // Snowflake-shaped, increasing ids.
  let nextId = 1200000000000000000n;

  const server = await startServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const payload = jsonObject((await readBody(req)).json);
    const record: FakeDiscordRequest = {
      method: req.method ?? '',
      path,
      authorization: redact(req.headers.authorization, options.token),
      userAgent: req.headers['user-agent'],
      contentType: req.headers['content-type'],
      payload,
      status: 0,
    };
    requests.push(record);
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      sendJson(res, status, body, headers);
    };
    const formError = (field: string, code: string, message: string) =>
      answer(400, {
        message: 'Invalid Form Body',
        code: 50035,
        errors: { [field]: { _errors: [{ code, message }] } },
      });

    // GET /users/@me (`agentgate doctor`'s probe): the bot user behind the token.
    if (path === '/api/v10/users/@me' && req.method === 'GET') {
      if (req.headers.authorization !== `Bot ${options.token}`) {
        return answer(401, { message: '401: Unauthorized', code: 0 });
      }
      return answer(200, { id: '1100000000000000001', username: 'fake-bot', discriminator: '0', bot: true });
    }
    // Create DM: POST /users/@me/channels {recipient_id} answers the DM channel (the same one every time).
    if (path === '/api/v10/users/@me/channels' && req.method === 'POST') {
      if (req.headers.authorization !== `Bot ${options.token}`) {
        return answer(401, { message: '401: Unauthorized', code: 0 });
      }
      const userId = typeof payload?.recipient_id === 'string' ? payload.recipient_id : '';
      if (!/^\d{1,20}$/.test(userId)) {
        return formError('recipient_id', 'NUMBER_TYPE_COERCE', `Value "${userId}" is not snowflake.`);
      }
      if (!users.has(userId)) return answer(400, { message: 'Invalid Recipient(s)', code: 50033 });
      let dm = dmChannels.get(userId);
      if (!dm) {
        nextId += 1n;
        dm = String(nextId);
        dmChannels.set(userId, dm);
        addChannel(dm);
      }
      return answer(200, {
        id: dm,
        type: 1,
        last_message_id: null,
        flags: 0,
        recipients: [{ id: userId, username: `user-${userId}`, discriminator: '0' }],
      });
    }
    const route = /^\/api\/v10\/channels\/([^/]+)\/messages$/.exec(path);
    if (!route) return answer(404, { message: '404: Not Found', code: 0 });
    if (req.method !== 'POST') return answer(405, { message: '405: Method Not Allowed', code: 0 });
    if (req.headers.authorization !== `Bot ${options.token}`) {
      return answer(401, { message: '401: Unauthorized', code: 0 });
    }

    const failure = failures.next();
    if (failure) {
      switch (failure.kind) {
        case 'rate_limit':
        case 'global_rate_limit': {
          const global = failure.kind === 'global_rate_limit';
          return answer(
            429,
            { message: 'You are being rate limited.', retry_after: failure.retryAfter, global },
            {
              'retry-after': String(Math.ceil(failure.retryAfter)),
              'x-ratelimit-scope': global ? 'global' : 'user',
              ...(global ? { 'x-ratelimit-global': 'true' } : {}),
            },
          );
        }
        case 'server_error':
          return answer(500, { message: '500: Internal Server Error', code: 0 });
        case 'bad_gateway':
          return sendBadGateway(
            res,
            record,
            '<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>',
          );
        case 'network':
          return dropConnection(req, record);
      }
    }

    const channelId = decodeURIComponent(route[1] ?? '');
    if (!/^\d{1,20}$/.test(channelId)) {
      return formError('channel_id', 'NUMBER_TYPE_COERCE', `Value "${channelId}" is not snowflake.`);
    }
    const channel = channels.get(channelId);
    if (!channel) return answer(404, { message: 'Unknown Channel', code: 10003 });
    if (channel.access === false) return answer(403, { message: 'Missing Access', code: 50001 });
    if (channel.canSend === false) return answer(403, { message: 'Missing Permissions', code: 50013 });
    const content = typeof payload?.content === 'string' ? payload.content : '';
    if (content.trim() === '') return answer(400, { message: 'Cannot send an empty message', code: 50006 });
    if (content.length > FAKE_DISCORD_TEXT_LIMIT) {
      return formError('content', 'BASE_TYPE_MAX_LENGTH', 'Must be 2000 or fewer in length.');
    }

    // Only SUPPRESS_EMBEDS (1 << 2) and SUPPRESS_NOTIFICATIONS (1 << 12) may be set on a new message.
    const flags = payload?.flags ?? 0;
    if (typeof flags !== 'number' || !Number.isInteger(flags) || (flags & ~SETTABLE_FLAGS) !== 0) {
      return formError('flags', 'MESSAGE_FLAGS_INVALID', 'Invalid flags.');
    }

    nextId += 1n;
    const id = String(nextId);
    messages.push({ channelId, id, content, payload: payload ?? {} });
    answer(200, {
      id,
      type: 0,
      content,
      channel_id: channelId,
      author: BOT_USER,
      attachments: [],
      embeds: [],
      mentions: [],
      mention_roles: [],
      pinned: false,
      mention_everyone: false,
      tts: false,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      flags,
      components: [],
    });
  });

  return {
    url: `${server.url}/api/v10`,
    messages,
    messagesFor: (channelId) => messages.filter((message) => message.channelId === channelId),
    dmMessagesFor: (userId) => messages.filter((message) => message.channelId === dmChannels.get(userId)),
    requests,
    failNext(count, kind = 'rate_limit', failOptions = {}) {
      failures.push(count, kind, { retryAfter: failOptions.retryAfter });
    },
    addChannel,
    reset() {
      messages.length = 0;
      requests.length = 0;
      failures.clear();
    },
    close: server.close,
  };
}
