/** The outbound client's requests, answers, failures and options (../outbound.ts). */
import type { ConnectGuard } from '../connect-guard.js';

/** Default time limit for one request. */
export const DEFAULT_TIMEOUT_MS = 30_000;

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

/** What every request of one client shares. */
export interface ClientContext {
  label: string;
  /** The client's time limit for one request (a request's own `timeoutMs` replaces it). */
  timeoutMs: number;
  fetch: typeof fetch;
  now: () => number;
  redact: (text: string) => string;
}

export type Describe = (answer: OutboundResponse) => string | undefined;
