/**
 * The one outbound HTTP client: every call agentgate makes to another service
 * (messaging platforms, model providers, Google, completion callbacks) goes
 * through it, on Node's global fetch (undici).
 *
 * What it does, so callers don't:
 * - a time limit on every request (`timeoutMs`, default 30 s), combined with the
 *   caller's own AbortSignal;
 * - failures before an answer (timeout, refused, reset, DNS) become an
 *   OutboundError of kind `timeout` or `network`, always temporary, whose message
 *   holds only the error code (`telegram: request failed (ECONNREFUSED)`):
 *   undici's messages may quote the URL, and a URL may hold a token;
 * - the caller's own abort is rethrown as the caller's reason, untouched: it is
 *   theirs to interpret (shutdown, run timeout);
 * - every answer is read whole and returned, whatever its status
 *   (`send`); `expectOk` throws for a non-2xx answer instead, classified:
 *   408, 425, 429 and 5xx are temporary, other 4xx permanent, with the wait
 *   from `Retry-After` (seconds or an HTTP date);
 * - `stream` is `expectOk` for an answer read as it arrives (a model's streamed
 *   reply): two limits replace the single one — until the status and headers
 *   (first byte), and between two pieces of the body (idle) — so a long answer
 *   that keeps coming is never cut, and a stalled one is;
 * - on request, what a caller that must not trust the other side needs (the
 *   completion callbacks, docs/callers.md, "Retries" and "SSRF rules"): a
 *   `guard` that checks the address actually connected to (connect-guard.ts),
 *   `redirect: 'manual'` so a 3xx is the answer rather than followed, and
 *   `maxBodyBytes` so no more of the answer's body is read than that;
 * - every message it builds goes through the client's redaction: the caller
 *   names its secrets (a token in the URL path, an API key, a password) and may
 *   add its own scrubbing (patterns such as `?token=`).
 *
 * What stays with the caller: the shape of the service's answers. A caller
 * that knows better than the status (Slack's HTTP 200 `{ok:false}`, Telegram's
 * `parameters.retry_after`, Discord's `retry_after`) reads `send`'s answer and
 * decides itself, with `classifyStatus` and `retryAfterMs` as building blocks.
 *
 *     const client = createOutboundClient({ label: 'telegram', secrets: [botToken] });
 *     const answer = await client.send({ url, json: { chat_id, text } }, signal);
 *     if (answer.status === 429) wait(retryAfterMs([answer.json?.parameters?.retry_after]));
 */

import { activeTrace } from '../observability/active-trace.js';
import { type ConnectGuard, type GuardedTarget, guardedTarget } from './connect-guard.js';

/** Default time limit for one request. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Longest slice of an answer's body quoted in an error message. */
const MAX_QUOTED_BODY = 200;

/** A request, described. Exactly one of `json`, `form` and `body` may be given. */
export interface OutboundRequest {
  /** Default `POST` when there is a body, else `GET`. */
  method?: string;
  url: string;
  headers?: Record<string, string>;
  /** Sent as JSON, with `content-type: application/json` unless `contentType` says otherwise. */
  json?: unknown;
  /** Sent as `application/x-www-form-urlencoded`. */
  form?: Record<string, string>;
  /** Sent as is, with `contentType`. */
  body?: string;
  contentType?: string;
  /** Replaces the client's time limit for this request. */
  timeoutMs?: number;
  /** `manual`: a 3xx answer is returned as it is, not followed. Default `follow`. */
  redirect?: 'follow' | 'manual';
  /**
   * Read at most this many bytes of the answer's body (as decoded); the rest is
   * not read, and the connection is closed. Default: the whole body.
   */
  maxBodyBytes?: number;
  /**
   * Connect only where the guard allows, checked on the address connected to,
   * on a connection of this request's own (connect-guard.ts). A refused target
   * fails the request with an OutboundError of failure `refused`, permanent.
   */
  guard?: ConnectGuard;
}

/** An answer, read whole. */
export interface OutboundResponse {
  status: number;
  statusText: string;
  headers: Headers;
  /** The body as text (an HTML error page from a proxy stays readable here). */
  raw: string;
  /** The body was longer than the request's `maxBodyBytes`: `raw` holds only its start. */
  truncated: boolean;
  /** The body parsed as a JSON object, or undefined when it is not one. */
  json: Record<string, unknown> | undefined;
}

/**
 * An answer whose body is read as it arrives (`stream`): a 2xx answer's status and
 * headers, and its body as decoded text pieces.
 */
export interface OutboundStream {
  status: number;
  statusText: string;
  headers: Headers;
  /**
   * The body, piece by piece (UTF-8 decoded across piece boundaries). Each piece must
   * arrive within the idle limit; a failure while reading is an OutboundError (`timeout`
   * or `network`, `duringAnswer`), the caller's abort its own reason. Read it once.
   */
  text: AsyncIterable<string>;
  /** Stops reading and closes the connection (a caller that has what it needs). */
  cancel(): Promise<void>;
}

/** Time limits of a streamed answer (`stream`; docs/agent-runs.md, "Streamed calls"). */
export interface StreamLimits {
  /** From sending the request to the answer's status and headers. */
  firstByteMs: number;
  /** Longest silence between two pieces of the body. */
  idleMs: number;
}

/** `temporary` is worth another try (later); `permanent` will fail the same way again. */
export type FailureKind = 'temporary' | 'permanent';

/**
 * Why a request failed: no answer in time, no answer at all, an answer refusing
 * it, or a target its guard refused (no connection made).
 */
export type OutboundFailure = 'timeout' | 'network' | 'status' | 'refused';

/** A failed outbound request; its message never holds a secret the client was told about. */
export class OutboundError extends Error {
  /** What went wrong: no answer in time, no answer at all, or a refusing answer. */
  readonly failure: OutboundFailure;
  readonly kind: FailureKind;
  /** The HTTP status, for `status` failures. */
  readonly status?: number;
  /** How long the service asked to wait before the next try. */
  readonly retryAfterMs?: number;
  /** Network failures: the error code (ECONNREFUSED, ENOTFOUND, UND_ERR_SOCKET, ...). */
  readonly code?: string;
  /** Network failures: the connection broke while the answer was being read. */
  readonly duringAnswer?: boolean;
  /** Timeouts: the time limit that ran out. */
  readonly timeoutMs?: number;
  /** Refusals: why the request's guard refused the target. */
  readonly refusal?: string;
  /**
   * Timeouts and network failures while the body was being read: the answer's
   * status and headers, which had arrived (a caller that needs only the status
   * may take it as the answer).
   */
  readonly answer?: { status: number; headers: Headers };

  constructor(message: string, details: Omit<OutboundError, keyof Error | 'temporary'>) {
    super(message);
    this.name = 'OutboundError';
    this.failure = details.failure;
    this.kind = details.kind;
    this.status = details.status;
    this.retryAfterMs = details.retryAfterMs;
    this.code = details.code;
    this.duringAnswer = details.duringAnswer;
    this.timeoutMs = details.timeoutMs;
    this.refusal = details.refusal;
    this.answer = details.answer;
  }

  get temporary(): boolean {
    return this.kind === 'temporary';
  }
}

export interface OutboundClientOptions {
  /** Prefix of every error message, e.g. `telegram` or `openai-chat provider "openai"`. */
  label: string;
  /** Strings that must never appear in an error message (tokens, keys, passwords); empty ones are ignored. */
  secrets?: readonly (string | undefined)[];
  /** More scrubbing after the secrets are removed (patterns, token shapes). */
  redact?: (text: string) => string;
  /** Time limit for one request; default 30 s. */
  timeoutMs?: number;
  /** Replaces the global fetch (tests, proxies). */
  fetch?: typeof fetch;
  /** The clock for HTTP-date Retry-After values; default Date.now. */
  now?: () => number;
}

export interface OutboundClient {
  /**
   * Sends the request and reads the whole answer, whatever its status. Throws
   * OutboundError (`timeout`/`network`, temporary) when there is no answer, or
   * the caller's abort reason when `signal` fired.
   */
  send(request: OutboundRequest, signal?: AbortSignal): Promise<OutboundResponse>;
  /**
   * `send`, then throws OutboundError (`status`) for a non-2xx answer, classified
   * by `classifyStatus`, with Retry-After and a short detail: `describe`'s
   * reading of the body when it has one, else the body quoted.
   */
  expectOk(
    request: OutboundRequest,
    signal?: AbortSignal,
    describe?: (answer: OutboundResponse) => string | undefined,
  ): Promise<OutboundResponse>;
  /**
   * `expectOk`, but a 2xx answer's body is handed back as it arrives rather than read
   * whole, under `limits` instead of the request's single time limit: a streamed answer
   * may rightly take longer than any one limit, as long as it keeps coming. A non-2xx
   * answer is read whole (as `expectOk`) and thrown. Requests with a `guard` or
   * `maxBodyBytes` are not streamed (an Error says so).
   */
  stream(
    request: OutboundRequest,
    limits: StreamLimits,
    signal?: AbortSignal,
    describe?: (answer: OutboundResponse) => string | undefined,
  ): Promise<OutboundStream>;
  /** The client's redaction, for messages the caller builds from an answer. */
  redact(text: string): string;
  readonly label: string;
}

export function createOutboundClient(options: OutboundClientOptions): OutboundClient {
  const scrubSecrets = redactor(...(options.secrets ?? []));
  const extra = options.redact;
  const client: ClientContext = {
    label: options.label,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    now: options.now ?? Date.now,
    redact: extra ? (text) => extra(scrubSecrets(text)) : scrubSecrets,
  };
  return {
    send: (request, signal) => send(client, request, signal),
    expectOk: (request, signal, describe) => expectOk(client, request, signal, describe),
    stream: (request, limits, signal, describe) => stream(client, request, limits, signal, describe),
    redact: client.redact,
    label: client.label,
  };
}

/** What every request of one client shares. */
interface ClientContext {
  label: string;
  /** The client's time limit for one request (a request's own `timeoutMs` replaces it). */
  timeoutMs: number;
  fetch: typeof fetch;
  now: () => number;
  redact: (text: string) => string;
}

type Describe = (answer: OutboundResponse) => string | undefined;

/** No answer, or an answer that broke off: a temporary failure naming the network's code. */
function networkFailure(client: ClientContext, error: unknown, answer?: Response): OutboundError {
  const code = networkCode(error);
  const what = answer ? 'the answer broke off' : 'request failed';
  return new OutboundError(client.redact(`${client.label}: ${what} (${code})`), {
    failure: 'network',
    kind: 'temporary',
    code,
    duringAnswer: answer !== undefined,
    ...(answer && { answer: { status: answer.status, headers: answer.headers } }),
  });
}

/** The request's guard refused its target: permanent, no connection made. */
function refusedFailure(client: ClientContext, reason: string): OutboundError {
  return new OutboundError(client.redact(`${client.label}: refused: ${reason}`), {
    failure: 'refused',
    kind: 'permanent',
    refusal: reason,
  });
}

/** A non-2xx answer, classified, with Retry-After and a short detail (`describe`'s, else the body quoted). */
function statusFailure(client: ClientContext, answer: OutboundResponse, describe?: Describe): OutboundError {
  const detail = describe?.(answer) ?? (quote(answer.raw) || answer.statusText || 'request failed');
  return new OutboundError(client.redact(`${client.label}: ${answer.status} ${detail}`), {
    failure: 'status',
    kind: classifyStatus(answer.status) === 'permanent' ? 'permanent' : 'temporary',
    status: answer.status,
    retryAfterMs: retryAfterMs([answer.headers.get('retry-after')], client.now()),
  });
}

/** The fetch of a request, its body and headers encoded; `init` adds its signal and dispatcher. */
function fetchRequest(client: ClientContext, request: OutboundRequest, init: RequestInit): Promise<Response> {
  const { body, contentType } = encodeBody(request);
  return client.fetch(request.url, {
    method: request.method ?? (body === undefined ? 'GET' : 'POST'),
    headers: requestHeaders(request, contentType),
    body,
    ...(request.redirect ? { redirect: request.redirect } : {}),
    ...init,
  });
}

function answerOf(response: Response, read: { raw: string; truncated: boolean }): OutboundResponse {
  return {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
    raw: read.raw,
    truncated: read.truncated,
    json: read.truncated ? undefined : parseObject(read.raw),
  };
}

async function send(
  client: ClientContext,
  request: OutboundRequest,
  signal?: AbortSignal,
): Promise<OutboundResponse> {
  const timeoutMs = request.timeoutMs ?? client.timeoutMs;
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let target: GuardedTarget | undefined;
  /** `answer`: the answer whose body was being read. */
  const failure = (error: unknown, answer?: Response): unknown => {
    // The caller's own abort (shutdown, run timeout) is theirs to interpret.
    if (signal?.aborted) return signal.reason;
    // The guard's lookup refused the name: the connection failed for that alone.
    const refusal = target?.refused === undefined ? target?.refusal() : undefined;
    if (refusal !== undefined) return refusedFailure(client, refusal);
    if (!timeout.aborted) return networkFailure(client, error, answer);
    return new OutboundError(client.redact(`${client.label}: no answer within ${timeoutMs / 1000} s`), {
      failure: 'timeout',
      kind: 'temporary',
      timeoutMs,
      ...(answer && { answer: { status: answer.status, headers: answer.headers } }),
    });
  };
  if (request.guard) {
    target = await guardedTarget(request.url, request.guard).catch((error) => {
      throw failure(error);
    });
    if (target.refused !== undefined) throw refusedFailure(client, target.refused);
  }
  const dispatcher = target?.refused === undefined ? target?.dispatcher : undefined;
  try {
    const init = { signal: combined, ...(dispatcher ? { dispatcher } : {}) };
    const response = await fetchRequest(client, request, init).catch((error) => {
      throw failure(error);
    });
    const read = await readBody(response, request.maxBodyBytes).catch((error) => {
      throw failure(error, response);
    });
    return answerOf(response, read);
  } finally {
    // The request's own connection: closed whatever happened.
    await dispatcher?.destroy().catch(() => {});
  }
}

async function expectOk(
  client: ClientContext,
  request: OutboundRequest,
  signal?: AbortSignal,
  describe?: Describe,
): Promise<OutboundResponse> {
  const answer = await send(client, request, signal);
  if (answer.status >= 200 && answer.status < 300) return answer;
  throw statusFailure(client, answer, describe);
}

/**
 * The two limits of a streamed answer on one controller: the first byte's, then each
 * silence's, re-armed per piece.
 */
class StreamClock {
  readonly limit = new AbortController();
  /** The limit armed last: the one a timeout names. */
  limitMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(firstByteMs: number) {
    this.limitMs = firstByteMs;
    this.arm(firstByteMs);
  }

  arm(ms: number): void {
    clearTimeout(this.timer);
    this.limitMs = ms;
    this.timer = setTimeout(() => this.limit.abort(), ms);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

async function stream(
  client: ClientContext,
  request: OutboundRequest,
  limits: StreamLimits,
  signal?: AbortSignal,
  describe?: Describe,
): Promise<OutboundStream> {
  if (request.guard || request.maxBodyBytes !== undefined) {
    throw new Error(`${client.label}: a guarded or size-capped request is not streamed`);
  }
  const clock = new StreamClock(limits.firstByteMs);
  const failure = (error: unknown, answer?: Response) => streamFailure(client, clock, signal, error, answer);
  const combined = signal ? AbortSignal.any([signal, clock.limit.signal]) : clock.limit.signal;
  const response = await fetchRequest(client, request, { signal: combined }).catch((error) => {
    throw failure(error);
  });
  if (response.status < 200 || response.status >= 300 || response.body === null) {
    return notAStream(client, response, limits, clock, failure, describe);
  }
  const reader = response.body.getReader();
  clock.arm(limits.idleMs);
  return {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
    text: streamPieces(reader, limits, clock, (error) => failure(error, response)),
    cancel: async () => {
      clock.stop();
      await reader.cancel().catch(() => {});
    },
  };
}

/** A streamed request's failure: the caller's abort as its reason, a limit run out, or the network's. */
function streamFailure(
  client: ClientContext,
  clock: StreamClock,
  signal: AbortSignal | undefined,
  error: unknown,
  answer?: Response,
): unknown {
  clock.stop();
  if (signal?.aborted) return signal.reason;
  if (!clock.limit.signal.aborted) return networkFailure(client, error, answer);
  const what = answer ? 'the answer paused for more than' : 'no answer within';
  return new OutboundError(client.redact(`${client.label}: ${what} ${clock.limitMs / 1000} s`), {
    failure: 'timeout',
    kind: 'temporary',
    timeoutMs: clock.limitMs,
    duringAnswer: answer !== undefined,
    ...(answer && { answer: { status: answer.status, headers: answer.headers } }),
  });
}

/**
 * A non-2xx answer, or a 2xx without a body: read whole (still within the idle limit);
 * the first refused as `expectOk` does, the second an empty stream.
 */
async function notAStream(
  client: ClientContext,
  response: Response,
  limits: StreamLimits,
  clock: StreamClock,
  failure: (error: unknown, answer?: Response) => unknown,
  describe?: Describe,
): Promise<OutboundStream> {
  clock.arm(limits.idleMs);
  let raw: string;
  try {
    raw = await response.text();
  } catch (error) {
    throw failure(error, response);
  } finally {
    clock.stop();
  }
  const answer = answerOf(response, { raw, truncated: false });
  if (response.status < 200 || response.status >= 300) throw statusFailure(client, answer, describe);
  return {
    ...answer,
    text: (async function* () {
      yield* [];
    })(),
    cancel: async () => {},
  };
}

/** The body as decoded pieces, each within the idle limit; `failure` makes a read's error the caller's. */
async function* streamPieces(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limits: StreamLimits,
  clock: StreamClock,
  failure: (error: unknown) => unknown,
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  try {
    for (;;) {
      clock.arm(limits.idleMs);
      let read: Awaited<ReturnType<typeof reader.read>>;
      try {
        read = await reader.read();
      } catch (error) {
        throw failure(error);
      }
      if (read.done) {
        const tail = decoder.decode();
        if (tail) yield tail;
        return;
      }
      const text = decoder.decode(read.value, { stream: true });
      if (text) yield text;
    }
  } finally {
    clock.stop();
    // Left early (the caller stopped, or an error): the connection is not read further.
    await reader.cancel().catch(() => {});
  }
}

/**
 * The default reading of a status: 2xx `ok`; 408 (timeout), 425 (too early),
 * 429 (rate limit) and 5xx `temporary`; any other status `permanent` (the
 * request itself was refused, and sending it again changes nothing).
 */
export function classifyStatus(status: number): 'ok' | FailureKind {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 408 || status === 425 || status === 429 || status >= 500) return 'temporary';
  return 'permanent';
}

/**
 * A wait in milliseconds from the first usable hint, in the order given: a
 * number of seconds (a JSON `retry_after`, possibly fractional), a numeric
 * string (`Retry-After: 3`), or an HTTP date (RFC 9110 §10.2.3) counted from
 * `now`. Rounded up, never negative; undefined when no hint is usable.
 */
export function retryAfterMs(hints: readonly unknown[], now: number = Date.now()): number | undefined {
  for (const hint of hints) {
    if (typeof hint === 'number' && Number.isFinite(hint) && hint >= 0) return Math.ceil(hint * 1000);
    if (typeof hint !== 'string' || hint.trim() === '') continue;
    const text = hint.trim();
    if (/^\d+(\.\d+)?$/.test(text)) return Math.ceil(Number(text) * 1000);
    // Only a real date: Date.parse also accepts bare numbers and odd fragments.
    if (!/[a-z]/i.test(text)) continue;
    const date = Date.parse(text);
    if (Number.isFinite(date)) return Math.max(0, date - now);
  }
  return undefined;
}

/**
 * Removes each secret from text about to be shown: services sometimes echo a
 * malformed token back in their errors. Longest first, so a secret that holds
 * another is removed whole; empty and missing secrets are ignored.
 */
export function redactor(...secrets: readonly (string | undefined)[]): (text: string) => string {
  const known = [...new Set(secrets.filter((secret): secret is string => !!secret))].sort(
    (a, b) => b.length - a.length,
  );
  return (text) => known.reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}

/** A network failure's code (from `cause.code` as undici sets it), never its message. */
export function networkCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? code : 'network error';
}

/** A body slice short enough for a log line, whitespace folded. */
export function quote(text: string, max = MAX_QUOTED_BODY): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** Only the host: a URL may carry credentials or tokens in its path or query. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the service';
  }
}

/** Joins a configured base URL and a path without doubling or dropping the slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

function encodeBody(request: OutboundRequest): { body?: string; contentType?: string } {
  if (request.json !== undefined) {
    return { body: JSON.stringify(request.json), contentType: request.contentType ?? 'application/json' };
  }
  if (request.form !== undefined) {
    return {
      body: new URLSearchParams(request.form).toString(),
      contentType: request.contentType ?? 'application/x-www-form-urlencoded',
    };
  }
  if (request.body !== undefined) return { body: request.body, contentType: request.contentType };
  return {};
}

/**
 * The body as text; with `max`, at most that many bytes of it, and the rest is
 * not read (cancelling the stream closes the connection).
 */
async function readBody(
  response: Response,
  max: number | undefined,
): Promise<{ raw: string; truncated: boolean }> {
  if (max === undefined || response.body === null) return { raw: await response.text(), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { raw: decode(chunks, size), truncated: false };
    if (size + value.byteLength > max) {
      chunks.push(value.subarray(0, max - size));
      await reader.cancel().catch(() => {});
      return { raw: decode(chunks, max), truncated: true };
    }
    chunks.push(value);
    size += value.byteLength;
  }
}

/** As Response.text() decodes: UTF-8, a leading BOM dropped, bad bytes replaced. */
function decode(chunks: Uint8Array[], size: number): string {
  return new TextDecoder().decode(Buffer.concat(chunks, size));
}

/**
 * The request's headers, with its body's content type unless it set one, and inside traced work
 * the active span's `traceparent` (docs/tracing.md, "Outbound requests and logs").
 */
function requestHeaders(request: OutboundRequest, contentType: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { ...request.headers };
  if (contentType && !hasHeader(headers, 'content-type')) headers['content-type'] = contentType;
  const trace = activeTrace();
  if (trace !== undefined && !hasHeader(headers, 'traceparent')) {
    headers.traceparent = trace.traceparent;
    if (trace.tracestate) headers.tracestate = trace.tracestate;
  }
  return headers;
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

function parseObject(raw: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
