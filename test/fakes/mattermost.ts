/**
 * A loopback fake of Mattermost's REST API v4 `POST /api/v4/posts`. It checks what
 * the real server checks, answers in its shapes, and records posts per channel.
 *
 *     const mm = await startFakeMattermost({ token: 'bot-token', channels: [CHANNEL_ID] });
 *     // config: channels.mattermost = { baseUrl: mm.url, token: 'bot-token' }
 *     expect(mm.postsFor(CHANNEL_ID).map((p) => p.message)).toEqual(['hello']);
 *     mm.failNext(1, 'rate_limit', { retryAfter: 3 });   // the next call gets 429
 *     await mm.close();
 *
 * Checks, in the server's order: the route is `/api/v4/posts` (else 404
 * `api.context.404.app_error`) and the method POST (else 405); the token, as
 * `Authorization: Bearer <token>` or `Token <token>`, is one it knows (else 401
 * `api.context.session_expired.app_error`); the body is a JSON post (else 400
 * `api.context.invalid_body_param.app_error`); the channel is one the bot may post
 * in (else 403 `api.context.permissions.app_error` — Mattermost checks permission
 * before existence, so an unknown or malformed channel id is a 403 too); the
 * message is at most 16383 characters (else 400
 * `model.post.is_valid.message_length.app_error`). Success is 201 with the post.
 *
 * Errors are AppErrors `{id, message, detailed_error, request_id, status_code}`;
 * the rate limiter's 429 is plain text "limit exceeded" with `Retry-After` and
 * `X-RateLimit-Reset` (seconds to wait, as Mattermost sends them).
 *
 * Direct messages: `POST /api/v4/channels/direct` with `[botUserId, userId]`
 * (the bot's id from `GET /api/v4/users/me`) creates, once, the direct channel
 * with a user listed in `users` (201, the channel); another user is 404
 * `app.user.missing_account.const`. Its posts are read with `directPostsFor`.
 *
 * `GET /api/v4/users/me` (`agentgate doctor`'s probe) answers the bot user, behind the same token check.
 */
import { randomBytes } from 'node:crypto';
import {
  dropConnection,
  FailureQueue,
  readBody,
  sendBadGateway,
  sendJson,
  sendText,
  startServer,
} from './support.js';

export interface FakeMattermostOptions {
  /** The access token it accepts; `tokens` adds more. */
  token: string;
  tokens?: string[];
  /** 26-character channel ids the bot can post in. */
  channels?: string[];
  /** User ids the bot can open a direct channel with (`POST /api/v4/channels/direct`). */
  users?: string[];
}

export interface FakeMattermostPost {
  id: string;
  channelId: string;
  message: string;
  createAt: number;
  /** Every field the client sent. */
  body: Record<string, unknown>;
}

export interface FakeMattermostRequest {
  method: string;
  path: string;
  /** `Bearer` or `Token` when an Authorization header came, else undefined (never the token). */
  authScheme: string | undefined;
  contentType: string | undefined;
  body: unknown;
  status: number;
}

/**
 * `rate_limit` 429 with Retry-After; `server_error` 500 AppError; `bad_gateway`
 * 502 HTML (a proxy in front); `network` (the connection is dropped).
 */
export type FakeMattermostFailure = 'rate_limit' | 'server_error' | 'bad_gateway' | 'network';

export interface FakeMattermost {
  /** Use as `channels.mattermost.baseUrl`. */
  url: string;
  posts: FakeMattermostPost[];
  postsFor(channelId: string): FakeMattermostPost[];
  /** Posts in the direct channel between the bot and a user (none when it was never created). */
  directPostsFor(userId: string): FakeMattermostPost[];
  requests: FakeMattermostRequest[];
  /** The next `count` authorised calls fail as `kind`; with `after`, that many succeed first. */
  failNext(
    count: number,
    kind?: FakeMattermostFailure,
    options?: { retryAfter?: number; after?: number },
  ): void;
  addChannel(channelId: string): void;
  /** Forgets the messages and requests recorded so far and the failures still queued; what the fake knows (recipients, chats, tokens) stays, so one fake serves several tests. */
  reset(): void;
  close(): Promise<void>;
}

export const FAKE_MATTERMOST_TEXT_LIMIT = 16_383;
const BOT_USER_ID = 'fakebotuserid0000000000000';

/** Mattermost ids: 26 characters of lower-case base32. */
export function mattermostId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(randomBytes(26), (byte) => alphabet[byte % alphabet.length]).join('');
}

export async function startFakeMattermost(options: FakeMattermostOptions): Promise<FakeMattermost> {
  const tokens = new Set([options.token, ...(options.tokens ?? [])]);
  const channels = new Set(options.channels ?? []);
  const users = new Set(options.users ?? []);
  /** The direct channel per user, created on the first request and the same ever after. */
  const directChannels = new Map<string, string>();
  const posts: FakeMattermostPost[] = [];
  const requests: FakeMattermostRequest[] = [];
  const failures = new FailureQueue<FakeMattermostFailure>(1);

  const server = await startServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const { json } = await readBody(req);
    const auth = /^(Bearer|Token)\s+(.+)$/i.exec(req.headers.authorization ?? '');
    const record: FakeMattermostRequest = {
      method: req.method ?? '',
      path,
      authScheme: auth?.[1],
      contentType: req.headers['content-type'],
      body: json,
      status: 0,
    };
    requests.push(record);
    const appError = (status: number, id: string, message: string, detailed = '') => {
      record.status = status;
      sendJson(res, status, {
        id,
        message,
        detailed_error: detailed,
        request_id: mattermostId(),
        status_code: status,
      });
    };

    // GET /api/v4/users/me (`agentgate doctor`'s probe): the user behind the token.
    if (path === '/api/v4/users/me' && req.method === 'GET') {
      if (!auth || !tokens.has(auth[2]?.trim() ?? '')) {
        return appError(
          401,
          'api.context.session_expired.app_error',
          'Invalid or expired session, please login again.',
        );
      }
      record.status = 200;
      return sendJson(res, 200, { id: BOT_USER_ID, username: 'fakebot', is_bot: true });
    }
    // POST /api/v4/channels/direct [userId, otherUserId]: creates the direct channel, or answers it.
    if (path === '/api/v4/channels/direct' && req.method === 'POST') {
      if (!auth || !tokens.has(auth[2]?.trim() ?? '')) {
        return appError(
          401,
          'api.context.session_expired.app_error',
          'Invalid or expired session, please login again.',
        );
      }
      const ids = Array.isArray(json) ? json : [];
      if (ids.length !== 2 || !ids.every((id) => typeof id === 'string' && /^[a-z0-9]{26}$/.test(id))) {
        return appError(
          400,
          'api.context.invalid_body_param.app_error',
          'Invalid or missing user_ids in request body.',
        );
      }
      // The session's user must be one side (else a permission error), the other a user that exists.
      if (!ids.includes(BOT_USER_ID)) {
        return appError(
          403,
          'api.context.permissions.app_error',
          'You do not have the appropriate permissions.',
        );
      }
      const other = (ids.find((id) => id !== BOT_USER_ID) ?? BOT_USER_ID) as string;
      if (!users.has(other)) {
        return appError(
          404,
          'app.user.missing_account.const',
          'Unable to find the user.',
          `user_id=${other}`,
        );
      }
      let channelId = directChannels.get(other);
      if (!channelId) {
        channelId = mattermostId();
        directChannels.set(other, channelId);
        channels.add(channelId);
      }
      record.status = 201;
      return sendJson(res, 201, { id: channelId, type: 'D', name: `${BOT_USER_ID}__${other}`, team_id: '' });
    }
    if (path !== '/api/v4/posts') {
      return appError(
        404,
        'api.context.404.app_error',
        'Sorry, we could not find the page.',
        `There doesn't appear to be an api call for the url='${path}'.`,
      );
    }
    if (req.method !== 'POST') {
      record.status = 405;
      res.writeHead(405).end();
      return;
    }
    if (!auth || !tokens.has(auth[2]?.trim() ?? '')) {
      return appError(
        401,
        'api.context.session_expired.app_error',
        'Invalid or expired session, please login again.',
      );
    }

    const failure = failures.next();
    if (failure) {
      switch (failure.kind) {
        case 'rate_limit':
          record.status = 429;
          return sendText(res, 429, 'limit exceeded\n', {
            'content-type': 'text/plain; charset=utf-8',
            'x-ratelimit-limit': '10',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset': String(failure.retryAfter),
            'retry-after': String(failure.retryAfter),
          });
        case 'server_error':
          return appError(500, 'app.post.save.app_error', 'Unable to save the Post.');
        case 'bad_gateway':
          return sendBadGateway(res, record);
        case 'network':
          return dropConnection(req, record);
      }
    }

    const body = record.body;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      return appError(
        400,
        'api.context.invalid_body_param.app_error',
        'Invalid or missing post in request body.',
      );
    }
    const post = body as Record<string, unknown>;
    const channelId = typeof post.channel_id === 'string' ? post.channel_id : '';
    if (!channels.has(channelId)) {
      return appError(
        403,
        'api.context.permissions.app_error',
        'You do not have the appropriate permissions.',
        'userId=fakebotuserid0000000000000, permission=create_post',
      );
    }
    const message = typeof post.message === 'string' ? post.message : '';
    if ([...message].length > FAKE_MATTERMOST_TEXT_LIMIT) {
      return appError(
        400,
        'model.post.is_valid.message_length.app_error',
        'Invalid Message property length.',
        `id=, channel_id=${channelId}`,
      );
    }

    const now = Date.now();
    const created: FakeMattermostPost = { id: mattermostId(), channelId, message, createAt: now, body: post };
    posts.push(created);
    record.status = 201;
    sendJson(res, 201, {
      id: created.id,
      create_at: now,
      update_at: now,
      edit_at: 0,
      delete_at: 0,
      is_pinned: false,
      user_id: BOT_USER_ID,
      channel_id: channelId,
      root_id: '',
      original_id: '',
      message,
      type: '',
      // The post's props as sent (`remove_link_preview`, …), as the server keeps them.
      props: post.props && typeof post.props === 'object' ? post.props : {},
      hashtags: '',
      pending_post_id: '',
      reply_count: 0,
      metadata: {},
    });
  });

  return {
    url: server.url,
    posts,
    directPostsFor: (userId: string) => posts.filter((post) => post.channelId === directChannels.get(userId)),
    postsFor: (channelId) => posts.filter((post) => post.channelId === channelId),
    requests,
    failNext(count, kind = 'rate_limit', failOptions = {}) {
      failures.push(count, kind, failOptions);
    },
    addChannel: (channelId) => void channels.add(channelId),
    reset() {
      posts.length = 0;
      requests.length = 0;
      failures.clear();
    },
    close: server.close,
  };
}
