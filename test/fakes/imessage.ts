/**
 * A loopback fake of a BlueBubbles server's `POST /api/v1/message/text` (the
 * iMessage bridge on a Mac). It checks what BlueBubbles checks, answers in its
 * shapes, and records what was sent per chat.
 *
 *     const bb = await startFakeBlueBubbles({ password: 'pw', handles: ['+15551230001'] });
 *     // config: channels.imessage = { serverUrl: bb.url, password: 'pw' }
 *     expect(bb.messagesFor('+15551230001').map((m) => m.text)).toEqual(['hello']);
 *     bb.failNext(1, 'rate_limit', { retryAfter: 3 });   // the next call gets 429
 *     await bb.close();
 *
 * Checks, in the server's order: the password, as query parameter `guid`,
 * `password` or `token`, matches (else 401 `Authentication Error`, for every
 * route, as BlueBubbles' auth middleware runs first); the route is
 * `POST /api/v1/message/text` (else 404); the body validates (400 `Validation
 * Error`): `chatGuid` required, `method` `apple-script` or `private-api`,
 * AppleScript needs `tempGuid` and `message`; `private-api` fails 500 unless `privateApi` is on; the chat exists:
 * `iMessage;-;<address>` for a known handle, or a chat guid added with `addChat`
 * (else 500 `iMessage Error` with Messages' AppleScript error "Can’t get chat id
 * …"). A handle marked `failing` is sent but saved with error code 22, which
 * BlueBubbles reports as 500 "Message sent with an error". Success is `{status:
 * 200, message: "Message sent!", data: {guid, tempGuid, text, …}}`.
 *
 * BlueBubbles itself has no rate limit; `rate_limit` models the tunnel (ngrok,
 * Cloudflare) usually in front of it: 429 with `Retry-After` and no JSON body.
 *
 * `GET /api/v1/ping` (`agentgate doctor`'s probe) answers pong, behind the same password check.
 */
import { randomUUID } from 'node:crypto';
import { dropConnection, FailureQueue, readBody, sendJson, sendText, startServer } from './support.js';

export interface FakeBlueBubblesOptions {
  password: string;
  /** Phone numbers or emails with a one-to-one iMessage chat. */
  handles?: string[];
  /** Handles whose messages Messages saves with an error (e.g. not on iMessage any more). */
  failing?: string[];
  /** Whether the Private API helper is connected. */
  privateApi?: boolean;
}

export interface FakeBlueBubblesMessage {
  guid: string;
  chatGuid: string;
  tempGuid: string | undefined;
  text: string;
  method: string;
  dateCreated: number;
}

export interface FakeBlueBubblesRequest {
  method: string;
  path: string;
  /** Which query parameter carried the password (`guid`, `password`, `token`), never its value. */
  authParam: string | undefined;
  body: unknown;
  status: number;
}

/**
 * `rate_limit` 429 from a tunnel with Retry-After; `server_error` 500 `Server
 * Error`; `imessage_error` 500 `iMessage Error` (Messages timed out); `network`
 * (the connection is dropped).
 */
export type FakeBlueBubblesFailure = 'rate_limit' | 'server_error' | 'imessage_error' | 'network';

export interface FakeBlueBubbles {
  /** Use as `channels.imessage.serverUrl`. */
  url: string;
  messages: FakeBlueBubblesMessage[];
  /** Messages of one chat, by handle (phone/email) or full chat guid. */
  messagesFor(handleOrChatGuid: string): FakeBlueBubblesMessage[];
  requests: FakeBlueBubblesRequest[];
  /** The next `count` authorised sends fail as `kind`; with `after`, that many succeed first. */
  failNext(
    count: number,
    kind?: FakeBlueBubblesFailure,
    options?: { retryAfter?: number; after?: number },
  ): void;
  /** Adds a one-to-one chat with a phone number or email. */
  addHandle(handle: string): void;
  /** Adds a chat by its full guid (e.g. a group `iMessage;+;chat123`). */
  addChat(chatGuid: string): void;
  /** Forgets the messages and requests recorded so far and the failures still queued; what the fake knows (recipients, chats, tokens) stays, so one fake serves several tests. */
  reset(): void;
  close(): Promise<void>;
}

const AUTH_PARAMS = ['guid', 'password', 'token'];

export async function startFakeBlueBubbles(options: FakeBlueBubblesOptions): Promise<FakeBlueBubbles> {
  const chats = new Set((options.handles ?? []).map((handle) => `iMessage;-;${handle}`));
  const failing = new Set((options.failing ?? []).map((handle) => `iMessage;-;${handle}`));
  for (const chat of failing) chats.add(chat);
  const messages: FakeBlueBubblesMessage[] = [];
  const requests: FakeBlueBubblesRequest[] = [];
  const failures = new FailureQueue<FakeBlueBubblesFailure>(1);

  const server = await startServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const { json } = await readBody(req);
    const authParam = AUTH_PARAMS.find((name) => url.searchParams.has(name));
    const record: FakeBlueBubblesRequest = {
      method: req.method ?? '',
      path: url.pathname,
      authParam,
      body: json,
      status: 0,
    };
    requests.push(record);
    const reply = (status: number, body: Record<string, unknown>) => {
      record.status = status;
      sendJson(res, status, body);
    };
    const fail = (status: number, message: string, type: string, detail: string, data?: unknown) =>
      reply(status, { status, message, error: { type, message: detail }, ...(data ? { data } : {}) });

    const given = authParam ? url.searchParams.get(authParam) : null;
    if (given !== options.password) {
      return fail(
        401,
        'You are not authorized to access this resource',
        'Authentication Error',
        'Unauthorized',
      );
    }
    // GET /api/v1/ping (`agentgate doctor`'s probe), behind the same password check.
    if (url.pathname === '/api/v1/ping' && req.method === 'GET') {
      return reply(200, { status: 200, message: 'Ping received!', data: 'pong' });
    }
    if (url.pathname !== '/api/v1/message/text' || req.method !== 'POST') {
      return fail(404, 'The requested resource was not found', 'Database Error', 'Not Found');
    }

    const body = (record.body ?? {}) as Record<string, unknown>;
    const badRequest = (detail: string) =>
      fail(
        400,
        "You've made a bad request! Please check your request params & body",
        'Validation Error',
        detail,
      );
    if (typeof body.chatGuid !== 'string' || body.chatGuid === '')
      return badRequest('The chatGuid field is required.');
    const method = body.method ?? 'apple-script';
    if (method !== 'apple-script' && method !== 'private-api') {
      return badRequest('The selected method is invalid.');
    }
    const tempGuid = typeof body.tempGuid === 'string' && body.tempGuid !== '' ? body.tempGuid : undefined;
    const text = typeof body.message === 'string' ? body.message : '';
    if (method === 'apple-script' && !tempGuid) {
      return badRequest("A 'tempGuid' is required when sending via AppleScript");
    }
    if (method === 'apple-script' && text === '')
      return badRequest("A 'message' is required when sending via AppleScript");

    const failure = failures.next();
    if (failure) {
      switch (failure.kind) {
        case 'rate_limit':
          record.status = 429;
          return sendText(res, 429, 'Too Many Requests', {
            'content-type': 'text/plain',
            'retry-after': String(failure.retryAfter),
          });
        case 'server_error':
          return fail(500, 'The server has encountered an error', 'Server Error', 'Database is locked');
        case 'imessage_error':
          return fail(
            500,
            'Message Send Error',
            'iMessage Error',
            'Messages got an error: AppleEvent timed out.',
          );
        case 'network':
          return dropConnection(req, record);
      }
    }

    if (method === 'private-api' && !options.privateApi) {
      return fail(500, 'Message Send Error', 'iMessage Error', 'iMessage Private API is not enabled!');
    }
    const chatGuid = body.chatGuid;
    if (!chats.has(chatGuid)) {
      return fail(
        500,
        'Message Send Error',
        'iMessage Error',
        `Messages got an error: Can’t get chat id "${chatGuid}".`,
      );
    }

    const message: FakeBlueBubblesMessage = {
      guid: randomUUID().toUpperCase(),
      chatGuid,
      tempGuid,
      text,
      method: String(method),
      dateCreated: Date.now(),
    };
    const data = {
      originalROWID: messages.length + 1,
      guid: message.guid,
      tempGuid,
      text,
      handle: null,
      handleId: 0,
      isFromMe: true,
      dateCreated: message.dateCreated,
      error: failing.has(chatGuid) ? 22 : 0,
      chats: [{ guid: chatGuid, style: 45, chatIdentifier: chatGuid.split(';').pop() }],
    };
    if (failing.has(chatGuid)) {
      return fail(
        500,
        'Message sent with an error. See attached message',
        'iMessage Error',
        'Message failed to send!',
        data,
      );
    }
    messages.push(message);
    reply(200, { status: 200, message: 'Message sent!', data });
  });

  return {
    url: server.url,
    messages,
    messagesFor(handleOrChatGuid) {
      const chatGuid = handleOrChatGuid.includes(';') ? handleOrChatGuid : `iMessage;-;${handleOrChatGuid}`;
      return messages.filter((message) => message.chatGuid === chatGuid);
    },
    requests,
    failNext(count, kind = 'rate_limit', failOptions = {}) {
      failures.push(count, kind, failOptions);
    },
    addHandle: (handle) => void chats.add(`iMessage;-;${handle}`),
    addChat: (chatGuid) => void chats.add(chatGuid),
    reset() {
      messages.length = 0;
      requests.length = 0;
      failures.clear();
    },
    close: server.close,
  };
}
