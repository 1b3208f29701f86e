/**
 * The gmail preset's Pub/Sub push receiver (CONTRACT §8). Each push names the
 * mailbox and its newest history id; the receiver reads what was added since
 * the last id it handled, forwards each new message (not sent, draft, spam or
 * trash) to the gateway's `/hooks/gmail` with `Idempotency-Key:
 * gmail:<messageId>`, and only then answers 2xx — any failure is a 5xx, so
 * Pub/Sub delivers the push again. Pushes are handled one at a time.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpError } from '../http/errors.js';
import { AuthFailureLimiter } from '../ingress/auth-limiter.js';
import { tokenMatcher } from '../ingress/token.js';
import type { Logger } from '../log.js';
import { type GmailApi, HistoryExpiredError } from './google/gmail-api.js';
import { extractMail, isExcluded } from './google/mime.js';
import { OidcRejected, type OidcVerifier } from './oidc.js';
import { type GmailState, newerHistoryId, readGmailState, writeGmailState } from './state.js';

const MAX_PUSH_BYTES = 64 * 1024;
/** How many of the label's newest messages are looked at when the stored history id has expired. */
const RECOVERY_SCAN = 25;
const RETRY_MAX_MS = 5 * 60_000;

export interface GmailReceiverOptions {
  account: string;
  label: string;
  topic: string;
  pushToken: string;
  hookUrl: string;
  hookToken: string;
  includeBody: boolean;
  maxBytes: number;
  renewEveryMinutes: number;
  serve: { bind: string; port: number; path: string };
  stateFile: string;
  api: GmailApi;
  /** Also require Google's OIDC token on each push (hooks.gmail.oidc). */
  oidc?: OidcVerifier;
  log: Logger;
  fetch?: typeof fetch;
}

interface Envelope {
  emailAddress: string;
  historyId: string;
  messageId: string;
}

export class GmailReceiver {
  private server?: Server;
  private state: GmailState;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly limiter = new AuthFailureLimiter();
  private readonly pushTokenIsValid: (token: string | undefined) => boolean;
  private readonly seenPushes = new Set<string>();
  private renewTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;
  url = '';

  constructor(private readonly options: GmailReceiverOptions) {
    this.state = readGmailState(options.stateFile);
    this.pushTokenIsValid = tokenMatcher(options.pushToken);
  }

  /** Listens, then registers the watch (retrying with backoff when Google cannot be reached). */
  async start(): Promise<string> {
    const { serve } = this.options;
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error) => this.answerError(response, error));
    });
    await new Promise<void>((resolve, reject) => {
      this.server?.once('error', reject);
      this.server?.listen(serve.port, serve.bind, () => resolve());
    });
    const { port } = this.server.address() as AddressInfo;
    const host = serve.bind.includes(':') ? `[${serve.bind}]` : serve.bind;
    this.url = `http://${host}:${port}${serve.path}`;
    void this.watchWithRetry(1000);
    const renewMs = this.options.renewEveryMinutes * 60_000;
    this.renewTimer = setInterval(() => void this.watchWithRetry(1000), renewMs);
    this.renewTimer.unref();
    return this.url;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.renewTimer);
    clearTimeout(this.retryTimer);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    await this.queue.catch(() => {});
  }

  /** `users.watch`; keeps the returned history id when none is stored yet. */
  private async watchWithRetry(delayMs: number): Promise<void> {
    if (this.stopped) return;
    const { api, account, topic, label, log } = this.options;
    try {
      const watch = await api.watch(account, topic, [label]);
      if (this.state.historyId === undefined) {
        this.state.historyId = String(watch.historyId);
        writeGmailState(this.options.stateFile, this.state);
      }
      log.info({ account, expiration: watch.expiration }, 'gmail watch registered');
    } catch (error) {
      log.warn(
        { account, error: (error as Error).message, retryInMs: delayMs },
        'gmail watch failed; retrying',
      );
      this.retryTimer = setTimeout(
        () => void this.watchWithRetry(Math.min(delayMs * 2, RETRY_MAX_MS)),
        delayMs,
      );
      this.retryTimer.unref();
    }
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://receiver');
    if (url.pathname !== this.options.serve.path) throw new HttpError(404, 'not_found', 'not found');
    if (request.method !== 'POST') {
      throw new HttpError(405, 'method_not_allowed', `${request.method} is not allowed; use POST`, {
        allow: 'POST',
      });
    }
    const address = (request.socket.remoteAddress ?? 'unknown').replace(/^::ffff:/, '');
    const lock = this.limiter.check(address);
    if (lock.locked) {
      throw new HttpError(429, 'rate_limited', 'too many failed authentication attempts; retry later', {
        'retry-after': String(lock.retryAfterSeconds),
      });
    }
    if (!this.pushTokenIsValid(url.searchParams.get('token') ?? undefined)) {
      this.limiter.fail(address);
      this.options.log.warn({ client: address }, 'gmail push refused: wrong or missing push token');
      throw new HttpError(401, 'unauthorized', 'missing or invalid push token');
    }
    if (this.options.oidc) {
      try {
        await this.options.oidc.verify(request.headers.authorization);
      } catch (error) {
        if (!(error instanceof OidcRejected)) throw error;
        this.limiter.fail(address);
        this.options.log.warn({ client: address, reason: error.message }, 'gmail push refused: OIDC token');
        throw new HttpError(401, 'unauthorized', error.message);
      }
    }
    this.limiter.succeed(address);
    const envelope = parseEnvelope(await readBody(request));
    const { log, account } = this.options;
    if (envelope.emailAddress.toLowerCase() !== account.toLowerCase()) {
      log.warn(
        { emailAddress: envelope.emailAddress },
        'gmail push for another mailbox acknowledged and ignored',
      );
      return answer(response, 204);
    }
    if (this.seenPushes.has(envelope.messageId)) {
      log.info({ messageId: envelope.messageId }, 'gmail push replayed; already handled');
      return answer(response, 204);
    }
    const work = this.queue.then(() => this.process(envelope));
    this.queue = work.catch(() => {});
    await work;
    this.remember(envelope.messageId);
    answer(response, 204);
  }

  /** Reads and forwards what is new since the stored history id; saves the new id only when all went through. */
  private async process(envelope: Envelope): Promise<void> {
    const { api, account, label, log } = this.options;
    const start = this.state.historyId ?? envelope.historyId;
    let ids: string[];
    let newest: string | undefined = envelope.historyId;
    try {
      const history = await api.history(account, start, label);
      ids = history.messageIds;
      newest = newerHistoryId(newest, history.historyId);
    } catch (error) {
      if (!(error instanceof HistoryExpiredError)) throw error;
      log.warn(
        { account, startHistoryId: start },
        'gmail history id expired; scanning the newest messages instead',
      );
      const recent = await api.listMessages(account, [label], RECOVERY_SCAN);
      ids = recent.filter((id) => !this.state.forwarded.includes(id)).reverse();
    }
    for (const id of ids) {
      if (this.state.forwarded.includes(id)) continue;
      const message = await api.getMessage(account, id);
      const mail = extractMail(message, {
        includeBody: this.options.includeBody,
        maxBytes: this.options.maxBytes,
      });
      if (isExcluded(mail.labelIds)) continue;
      await this.forward(mail);
      this.state.forwarded.push(id);
    }
    this.state.historyId = newerHistoryId(this.state.historyId, newest);
    writeGmailState(this.options.stateFile, this.state);
  }

  private async forward(mail: ReturnType<typeof extractMail>): Promise<void> {
    const { labelIds: _labels, ...fields } = mail;
    const response = await (this.options.fetch ?? fetch)(this.options.hookUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${this.options.hookToken}`,
        'content-type': 'application/json',
        'idempotency-key': `gmail:${mail.id}`,
      },
      body: JSON.stringify({ messages: [fields] }),
      signal: AbortSignal.timeout(30_000),
    });
    // 409: this key was accepted before with another body (e.g. a longer cut) — already forwarded.
    if (!response.ok && response.status !== 409) {
      throw new Error(`the gateway answered ${response.status} for gmail message ${mail.id}`);
    }
    await response.arrayBuffer();
  }

  private remember(pushId: string): void {
    this.seenPushes.add(pushId);
    if (this.seenPushes.size > 1000) {
      const oldest = this.seenPushes.values().next().value;
      if (oldest !== undefined) this.seenPushes.delete(oldest);
    }
  }

  private answerError(response: ServerResponse, error: unknown): void {
    if (error instanceof HttpError) {
      answer(response, error.statusCode, error.toJSON(), error.headers);
      return;
    }
    this.options.log.error(
      { error: (error as Error).message },
      'gmail push failed; Pub/Sub will deliver it again',
    );
    answer(response, 503, { ok: false, error: 'could not process the push; retry', code: 'unavailable' });
  }
}

function answer(
  response: ServerResponse,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  if (body === undefined) {
    response.writeHead(status, headers).end();
    return;
  }
  response
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
    .end(JSON.stringify(body));
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PUSH_BYTES) {
        reject(new HttpError(413, 'payload_too_large', `push body exceeds ${MAX_PUSH_BYTES} bytes`));
        request.destroy();
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/** Pub/Sub's push envelope: `{message: {data: base64({emailAddress, historyId}), messageId}, subscription}`. */
export function parseEnvelope(body: Buffer): Envelope {
  const malformed = (why: string) => new HttpError(400, 'invalid_payload', `malformed Pub/Sub push: ${why}`);
  let outer: { message?: { data?: unknown; messageId?: unknown; message_id?: unknown } };
  try {
    outer = JSON.parse(body.toString('utf8'));
  } catch {
    throw malformed('not JSON');
  }
  const message = outer?.message;
  if (!message || typeof message.data !== 'string') throw malformed('message.data is missing');
  const messageId = message.messageId ?? message.message_id;
  if (typeof messageId !== 'string' || messageId === '') throw malformed('message.messageId is missing');
  let data: { emailAddress?: unknown; historyId?: unknown };
  try {
    data = JSON.parse(Buffer.from(message.data, 'base64').toString('utf8'));
  } catch {
    throw malformed('message.data is not base64 JSON');
  }
  const historyId = typeof data.historyId === 'number' ? String(data.historyId) : data.historyId;
  if (typeof data.emailAddress !== 'string' || typeof historyId !== 'string' || !/^\d+$/.test(historyId)) {
    throw malformed('the notification needs emailAddress and a numeric historyId');
  }
  return { emailAddress: data.emailAddress, historyId, messageId };
}
