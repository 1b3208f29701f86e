/**
 * A loopback fake of a signal-cli daemon's JSON-RPC HTTP endpoint (`signal-cli
 * daemon --http`, man signal-cli-jsonrpc(5)) in multi-account mode, serving the
 * `send` method. It checks what signal-cli checks, answers in its shapes, and
 * records what was sent per recipient.
 *
 *     const sig = await startFakeSignal({ account: '+15550000000', registered: ['+15551230001'] });
 *     // config: channels.signal = { rpcUrl: sig.url, account: '+15550000000' }
 *     expect(sig.messagesFor('+15551230001').map((m) => m.message)).toEqual(['hello']);
 *     sig.failNext(1, 'rate_limit', { retryAfter: 3 });   // the next send gets error -5
 *     await sig.close();
 *
 * Checks, in the daemon's order: path `/api/v1/rpc` (else 404, empty), method POST
 * (else 405), `Content-Type: application/json` (else 415); then JSON-RPC, always
 * with HTTP 200: the body parses (else -32700), has `method` (else -32600 "method
 * field must be set"), the method is `send` (else -32601 "Method not implemented"),
 * `params.account` names a known account (missing: -32602 "Method requires valid
 * account parameter"; unknown: -32602 "Specified account does not exist"); every
 * recipient is an E.164 number (else -1 "Invalid phone number '…'"), the message
 * is not empty (else -1 "Sending empty message is not allowed, …"); then per
 * recipient: not on Signal → -1 "Failed to send message" with an
 * UNREGISTERED_FAILURE result in `data.response.results`; a changed safety
 * number (`untrusted`) → -4 with an IDENTITY_FAILURE result. Success is
 * `{result:{timestamp, results:[{recipientAddress, type:"SUCCESS"}]}}`.
 *
 * Recipient forms: `recipient` numbers or ACI uuids (a registered number's uuid
 * reaches it), `username` (listed in `usernames`, else -1), `groupId` (listed in
 * `groups`, else -1 "Group not found"). `textStyle` entries must be
 * "start:length:STYLE" within the message (UTF-16 offsets), else -32602.
 *
 * The `version` method (`agentgate doctor`'s probe) is answered too, without an account.
 */
import { randomUUID } from 'node:crypto';
import { dropConnection, FailureQueue, readBody, sendBadGateway, sendJson, startServer } from './support.js';

export interface FakeSignalOptions {
  /** The account(s) the daemon has registered. */
  account: string;
  accounts?: string[];
  /** Numbers registered on Signal; anything else is an unregistered recipient. */
  registered?: string[];
  /** Registered numbers whose safety number changed (sending needs `trust`). */
  untrusted?: string[];
  /** Basic auth the endpoint demands, as a proxy in front of the daemon would. */
  basicAuth?: { user: string; password: string };
  /** Group ids (base64) the account is a member of (`groupId`). */
  groups?: string[];
  /** Usernames (`name.01`) of registered numbers (`username`). */
  usernames?: Record<string, string>;
}

export interface FakeSignalMessage {
  account: string;
  /** The number it reached (also when addressed by uuid or username), or `group:<id>`. */
  recipient: string;
  message: string;
  /** `textStyle` as sent ("start:length:STYLE"). */
  textStyle: string[];
  timestamp: number;
}

export interface FakeSignalRequest {
  httpMethod: string;
  path: string;
  contentType: string | undefined;
  /** The JSON-RPC request as parsed (undefined when it did not parse). */
  body: unknown;
  status: number;
  /** The JSON-RPC error code answered, if any. */
  errorCode?: number;
}

/**
 * `rate_limit` error -5 with RATE_LIMIT_FAILURE results (`retryAfterSeconds`);
 * `io_error` -3; `internal_error` -32603 (an IOException while sending);
 * `network_failure` -1 with NETWORK_FAILURE results; `bad_gateway` HTTP 502 from a
 * proxy; `network` (the connection is dropped).
 */
export type FakeSignalFailure =
  | 'rate_limit'
  | 'io_error'
  | 'internal_error'
  | 'network_failure'
  | 'bad_gateway'
  | 'network';

export interface FakeSignal {
  /** The whole JSON-RPC endpoint, `http://127.0.0.1:PORT/api/v1/rpc`: use as `channels.signal.rpcUrl`. */
  url: string;
  messages: FakeSignalMessage[];
  messagesFor(recipient: string): FakeSignalMessage[];
  requests: FakeSignalRequest[];
  /** The next `count` sends fail as `kind`; with `after`, that many succeed first. */
  failNext(count: number, kind?: FakeSignalFailure, options?: { retryAfter?: number; after?: number }): void;
  /** Registers a number on Signal. */
  register(number: string): void;
  /** The ACI uuid the fake gave a registered number. */
  uuidOf(number: string): string | undefined;
  /** Forgets the messages and requests recorded so far and the failures still queued; what the fake knows (recipients, chats, tokens) stays, so one fake serves several tests. */
  reset(): void;
  close(): Promise<void>;
}

const E164 = /^\+[1-9]\d{6,14}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const STYLE = /^(\d+):(\d+):(BOLD|ITALIC|SPOILER|STRIKETHROUGH|MONOSPACE)$/;

export async function startFakeSignal(options: FakeSignalOptions): Promise<FakeSignal> {
  const accounts = new Set([options.account, ...(options.accounts ?? [])]);
  const registered = new Map<string, string>();
  const untrusted = new Set(options.untrusted ?? []);
  const messages: FakeSignalMessage[] = [];
  const requests: FakeSignalRequest[] = [];
  const failures = new FailureQueue<FakeSignalFailure>(1);
  const register = (number: string) => void registered.set(number, randomUUID());
  for (const number of [...(options.registered ?? []), ...untrusted]) register(number);
  const address = (number: string) => ({ uuid: registered.get(number) ?? null, number });
  const groups = new Set(options.groups ?? []);
  const usernames = new Map(
    Object.entries(options.usernames ?? {}).map(([name, number]) => [name.toLowerCase(), number]),
  );
  /** A uuid recipient as the number registered with it (unknown uuids stay as they are). */
  const numberOf = (recipient: string) =>
    UUID.test(recipient)
      ? ([...registered].find(([, uuid]) => uuid === recipient.toLowerCase())?.[0] ?? recipient)
      : recipient;

  const server = await startServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const { json } = await readBody(req);
    const contentType = req.headers['content-type'];
    const record: FakeSignalRequest = {
      httpMethod: req.method ?? '',
      path,
      contentType,
      body: json,
      status: 0,
    };
    requests.push(record);
    const plain = (status: number) => {
      record.status = status;
      res.writeHead(status).end();
    };
    if (options.basicAuth) {
      const expected = Buffer.from(`${options.basicAuth.user}:${options.basicAuth.password}`).toString(
        'base64',
      );
      if (req.headers.authorization !== `Basic ${expected}`) return plain(401);
    }
    if (path !== '/api/v1/rpc') return plain(404);
    if (req.method !== 'POST') return plain(405);
    if (!contentType?.startsWith('application/json')) return plain(415);

    const request = record.body as { jsonrpc?: unknown; method?: unknown; params?: unknown; id?: unknown };
    const id = request && typeof request === 'object' && 'id' in request ? (request.id ?? null) : null;
    const rpcError = (code: number, message: string, data: unknown = null) => {
      record.status = 200;
      record.errorCode = code;
      sendJson(res, 200, { jsonrpc: '2.0', error: { code, message, data }, id });
    };
    if (record.body === undefined) return rpcError(-32700, 'Parse error');
    if (typeof request !== 'object' || request === null || typeof request.method !== 'string') {
      return rpcError(-32600, 'method field must be set');
    }
    // version (`agentgate doctor`'s probe): answered without an account, as signal-cli does.
    if (request.method === 'version') {
      record.status = 200;
      return sendJson(res, 200, { jsonrpc: '2.0', result: { version: '0.13.0-fake' }, id });
    }
    if (request.method !== 'send') return rpcError(-32601, 'Method not implemented');
    const params = (request.params ?? {}) as {
      account?: unknown;
      recipient?: unknown;
      message?: unknown;
      groupId?: unknown;
      username?: unknown;
      textStyle?: unknown;
    };
    if (typeof params.account !== 'string' || params.account === '') {
      return rpcError(-32602, 'Method requires valid account parameter');
    }
    if (!accounts.has(params.account)) return rpcError(-32602, 'Specified account does not exist');

    const failure = failures.next();
    const timestamp = Date.now();
    if (failure) {
      const failed = (type: string, extra: Record<string, unknown> = {}) => ({
        response: {
          timestamp,
          results: recipientsOf(params).map((r) => ({ recipientAddress: address(r), type, ...extra })),
        },
      });
      switch (failure.kind) {
        case 'rate_limit':
          return rpcError(
            -5,
            'Failed to send message due to rate limiting',
            failed('RATE_LIMIT_FAILURE', {
              token: 'fake-challenge-token',
              retryAfterSeconds: failure.retryAfter,
            }),
          );
        case 'io_error':
          return rpcError(-3, 'Failed to send message: Connection reset (IOException)');
        case 'internal_error':
          return rpcError(-32603, 'Failed to send message: Timeout (TimeoutException)');
        case 'network_failure':
          return rpcError(-1, 'Failed to send message', failed('NETWORK_FAILURE'));
        case 'bad_gateway':
          return sendBadGateway(res, record);
        case 'network':
          return dropConnection(req, record);
      }
    }

    const groupId = typeof params.groupId === 'string' ? params.groupId : undefined;
    const recipients = recipientsOf(params);
    for (const name of recipientsOf({ recipient: params.username })) {
      const number = usernames.get(name.toLowerCase());
      if (number === undefined)
        return rpcError(-1, `Failed to send message: Username ${name} is not registered`);
      recipients.push(number);
    }
    if (recipients.length === 0 && groupId === undefined) return rpcError(-1, 'No recipients given');
    const invalid = recipients.find((recipient) => !E164.test(recipient) && !UUID.test(recipient));
    if (invalid !== undefined) {
      return rpcError(
        -1,
        `Invalid phone number '${invalid}': The string supplied is too short to be a phone number.`,
      );
    }
    const message = typeof params.message === 'string' ? params.message : '';
    if (message === '') {
      return rpcError(
        -1,
        'Sending empty message is not allowed, either a message, attachment or sticker must be given.',
      );
    }
    const textStyle = recipientsOf({ recipient: params.textStyle });
    for (const style of textStyle) {
      const match = STYLE.exec(style);
      // Ranges are UTF-16 offsets into the message, as Signal's BodyRange counts.
      if (!match || Number(match[1]) + Number(match[2]) > message.length || Number(match[2]) === 0) {
        return rpcError(-32602, `Invalid text style: ${style}`);
      }
    }
    if (groupId !== undefined) {
      if (!groups.has(groupId)) return rpcError(-1, `Failed to send message: Group not found: ${groupId}`);
      messages.push({
        account: params.account,
        recipient: `group:${groupId}`,
        message,
        textStyle,
        timestamp,
      });
      record.status = 200;
      return sendJson(res, 200, { jsonrpc: '2.0', result: { timestamp, results: [] }, id });
    }
    const results = recipients.map(numberOf).map((recipient) => ({
      recipientAddress: UUID.test(recipient) ? { uuid: recipient, number: null } : address(recipient),
      type: !registered.has(recipient)
        ? 'UNREGISTERED_FAILURE'
        : untrusted.has(recipient)
          ? 'IDENTITY_FAILURE'
          : 'SUCCESS',
    }));
    const delivered = results.filter((result) => result.type === 'SUCCESS');
    for (const result of delivered) {
      messages.push({
        account: params.account,
        recipient: result.recipientAddress.number as string,
        message,
        textStyle,
        timestamp,
      });
    }
    if (delivered.length === 0) {
      // signal-cli's SendMessageResultUtils: only untrusted → -4, otherwise a user error.
      if (results.every((result) => result.type === 'IDENTITY_FAILURE')) {
        return rpcError(-4, 'Failed to send message due to untrusted identities', {
          response: { timestamp, results },
        });
      }
      return rpcError(-1, 'Failed to send message', { response: { timestamp, results } });
    }
    record.status = 200;
    sendJson(res, 200, { jsonrpc: '2.0', result: { timestamp, results }, id });
  });

  return {
    url: `${server.url}/api/v1/rpc`,
    messages,
    messagesFor: (recipient) => messages.filter((message) => message.recipient === recipient),
    requests,
    failNext(count, kind = 'rate_limit', failOptions = {}) {
      failures.push(count, kind, failOptions);
    },
    register,
    uuidOf: (number: string) => registered.get(number),
    reset() {
      messages.length = 0;
      requests.length = 0;
      failures.clear();
    },
    close: server.close,
  };
}

/** signal-cli takes `recipient` as one value or an array (man signal-cli-jsonrpc(5)). */
function recipientsOf(params: { recipient?: unknown }): string[] {
  const value = params.recipient;
  const list = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return list.map((item) => String(item));
}
