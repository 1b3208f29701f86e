/**
 * Plumbing shared by the loopback fakes in this folder: a node:http server on
 * 127.0.0.1 with a random port, reading a request body, writing answers,
 * injected failures, dropped connections and client aborts. What a platform
 * checks, and the shapes it answers in, stay in that platform's fake.
 *
 *     const server = await startServer(async (req, res) => {
 *       const body = await readBody(req);             // { raw, json, form }
 *       const failure = failures.next();              // from failNext(...)
 *       if (failure?.kind === 'network') return dropConnection(req, record);
 *       sendJson(res, 200, { ok: true });
 *     });
 *     // server.url: http://127.0.0.1:PORT;   await server.close();
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeServer {
  /** The server's origin, `http://127.0.0.1:PORT` (no trailing slash). */
  url: string;
  /** Stops the server, destroying open (keep-alive or pending) connections first. */
  close(): Promise<void>;
}

/** Starts `handler` on 127.0.0.1 on a free port. */
export async function startServer(
  handler: (req: IncomingMessage, res: ServerResponse) => unknown,
): Promise<FakeServer> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface RequestBody {
  /** The body as UTF-8 text (`''` when there is none). */
  raw: string;
  /** `raw` parsed as JSON, any JSON value; undefined when it does not parse. */
  json: unknown;
  /** `raw` parsed as `application/x-www-form-urlencoded` (the last value wins for a repeated name). */
  form: Record<string, string>;
}

/** Reads the whole body and parses it both ways; a fake uses what its content type calls for. */
export function readBody(req: IncomingMessage): Promise<RequestBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      resolve({ raw, json: parseJson(raw), form: Object.fromEntries(new URLSearchParams(raw)) });
    });
    req.on('error', reject);
  });
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** `value` when it is a JSON object (not null, not an array), else undefined. */
export function jsonObject(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * The parameters of a body sent as JSON (an object) or urlencoded form, chosen by
 * `contentType`; `{}` for an empty body, another type, or JSON that is not an object.
 */
export function bodyParams(body: RequestBody, contentType: string | undefined): Record<string, unknown> {
  if (body.raw === '') return {};
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json') return jsonObject(body.json) ?? {};
  if (type === 'application/x-www-form-urlencoded') return body.form;
  return {};
}

/** `value` with every occurrence of each secret replaced by `<token>` (for recorded headers). */
export function redact(value: string | undefined, ...secrets: string[]): string | undefined {
  return secrets.reduce<string | undefined>((out, secret) => out?.split(secret).join('<token>'), value);
}

/**
 * A JSON answer. `content-type: application/json` and `content-length` come first;
 * `headers` are added after them and may replace the content type. With
 * `contentLength: false` no length is sent and Node streams the body chunked.
 */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  options: { contentLength?: boolean } = {},
): void {
  const text = JSON.stringify(body);
  const length = options.contentLength === false ? {} : { 'content-length': Buffer.byteLength(text) };
  res.writeHead(status, { 'content-type': 'application/json', ...length, ...headers });
  res.end(text);
}

/** A non-JSON answer with exactly `headers` (no content-length: Node streams it chunked). */
export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, headers);
  res.end(text);
}

/** What the fakes' `bad_gateway` failure answers: a proxy's HTML page. */
export const BAD_GATEWAY_HTML = '<html><body><h1>502 Bad Gateway</h1></body></html>';

/** Answers 502 with an HTML page, as a proxy in front of the API would, and records the status. */
export function sendBadGateway(
  res: ServerResponse,
  record: { status: number },
  html = BAD_GATEWAY_HTML,
): void {
  record.status = 502;
  sendText(res, 502, html, { 'content-type': 'text/html' });
}

/** The `network` failure: the connection is dropped with no answer; `record.status` becomes -1. */
export function dropConnection(req: IncomingMessage, record?: { status: number }): void {
  if (record) record.status = -1;
  req.socket.destroy();
}

/** One injected failure: its kind and the wait to announce (seconds). */
export interface Failure<K extends string, R extends number | undefined = number> {
  kind: K;
  retryAfter: R;
}

/**
 * The queue behind a fake's `failNext(count, kind, options)`: upcoming calls in
 * order, each a failure to inject or a pass (from `after`). Each call that reaches
 * the point of failure takes one entry with `next()`.
 */
export class FailureQueue<K extends string, R extends number | undefined = number> {
  private readonly entries: (Failure<K, R> | null)[] = [];

  /** `defaultRetryAfter` is used when `push` gets no `retryAfter`. */
  constructor(private readonly defaultRetryAfter: R) {}

  /** Queues `after` passes, then `count` failures of `kind`. */
  push(count: number, kind: K, options: { retryAfter?: number; after?: number } = {}): void {
    for (let i = 0; i < (options.after ?? 0); i++) this.entries.push(null);
    const retryAfter = (options.retryAfter ?? this.defaultRetryAfter) as R;
    for (let i = 0; i < count; i++) this.entries.push({ kind, retryAfter });
  }

  /** The failure for this call, or undefined when it should go through (a pass or an empty queue). */
  next(): Failure<K, R> | undefined {
    return this.entries.shift() ?? undefined;
  }

  /** Drops whatever is still queued. */
  clear(): void {
    this.entries.length = 0;
  }
}

/**
 * Notices requests whose client hangs up before the answer is complete: marks the
 * record `aborted` and resolves whoever waits in `next()`.
 */
export class AbortWatch<T extends { aborted: boolean }> {
  private readonly waiters: ((record: T) => void)[] = [];

  watch(res: ServerResponse, record: T): void {
    res.on('close', () => {
      if (res.writableFinished) return;
      record.aborted = true;
      for (const resolve of this.waiters.splice(0)) resolve(record);
    });
  }

  /** Resolves with the next request aborted from now on. */
  next(): Promise<T> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** Waits `ms`, or less when the client closes the connection first. */
export function waitUnlessClosed(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    res.on('close', done);
    function done() {
      clearTimeout(timer);
      // A streamed answer waits many times on one response: no listener is left behind.
      res.off('close', done);
      resolve();
    }
  });
}

/** One server-sent event as a provider writes it: an optional `event:` name and one `data:` line. */
export interface WireEvent {
  event?: string;
  data: string;
}

/**
 * A streamed answer (`text/event-stream`, chunked) as the model APIs send one: each
 * event written on its own, `delayMs` apart, so the client reads them as they come.
 * `end: 'drop'` destroys the connection after the last event instead of ending it
 * (a stream that broke off). Stops early when the client goes.
 */
export async function sendEventStream(
  res: ServerResponse,
  events: readonly WireEvent[],
  options: { delayMs?: number; end?: 'end' | 'drop' } = {},
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.flushHeaders();
  for (const [index, wire] of events.entries()) {
    if (index > 0 && options.delayMs) await waitUnlessClosed(res, options.delayMs);
    if (res.destroyed) return;
    res.write(`${wire.event === undefined ? '' : `event: ${wire.event}\n`}data: ${wire.data}\n\n`);
  }
  if (options.end === 'drop') res.socket?.destroy();
  else res.end();
}

/** A reply cut into a few pieces as a model streams it: words with their following space. */
export function pieces(text: string): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  return words.length > 0 ? words : [text];
}
