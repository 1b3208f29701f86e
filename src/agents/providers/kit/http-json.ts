/**
 * The one HTTP exchange the HTTP providers share: POST a JSON body, get JSON back,
 * through the shared outbound client (src/http/outbound.ts), and turn every way
 * that can fail into a ProviderError fit for `run.error` — except an abort, which
 * is rethrown as the caller's own reason (see abort.ts).
 *
 * Each ProviderError says whether another try may succeed (`transient`: no
 * answer, 408/429/5xx) and how long the provider asked to wait (Retry-After);
 * agents/turn.ts retries on that.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import {
  createOutboundClient,
  hostOf,
  OutboundError,
  quote,
  type StreamLimits,
} from '../../../http/outbound.js';
import { abortReason } from './abort.js';
import { ProviderError } from './types.js';

export interface PostJsonOptions {
  /** Prefix of every error message, e.g. `openai-chat provider "openai"`. */
  label: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  /** Pulls the human message out of the API's error body, if it has the API's shape. */
  errorMessage: (json: unknown) => string | undefined;
  /** Secrets that must never reach an error message (the API key). */
  secrets: (string | undefined)[];
}

/**
 * No time limit of the client's own: the run's `timeoutSeconds` bound a model call
 * through `signal` (a long completion may rightly take many minutes).
 */
const NO_CLIENT_LIMIT_MS = 2_147_483_647;

export async function postJson(options: PostJsonOptions): Promise<unknown> {
  const { label, url, signal } = options;
  const client = createOutboundClient({ label, secrets: options.secrets, timeoutMs: NO_CLIENT_LIMIT_MS });
  let answer: Awaited<ReturnType<typeof client.expectOk>>;
  try {
    answer = await client.expectOk(
      { url, headers: options.headers, json: options.body },
      signal,
      (failed) => {
        const json = parse(failed.raw);
        return json === undefined ? undefined : options.errorMessage(json);
      },
    );
  } catch (error) {
    if (signal.aborted) throw abortReason(signal);
    if (!(error instanceof OutboundError)) throw error;
    // Not reaching the provider, or losing the connection, may pass: the turn retries it.
    const transient = error.failure === 'status' ? undefined : true;
    throw new ProviderError(client.redact(describe(error, label, url)), error.status, {
      transient,
      retryAfterMs: error.retryAfterMs,
    });
  }
  const json = parse(answer.raw);
  if (json === undefined) {
    const reason = `${label}: returned a reply that is not JSON: ${quote(answer.raw) || '(empty body)'}`;
    throw new ProviderError(client.redact(reason), answer.status);
  }
  return json;
}

/**
 * The time limits of a streamed model call (docs/agent-runs.md, "Streamed calls"): the
 * answer's status and headers within 2 minutes (a long prompt is read before the first
 * token), then no silence longer than 2 minutes between two pieces (a reasoning model may
 * think a while between tokens). The run's `timeoutSeconds` still bounds the whole call.
 */
export const MODEL_STREAM_LIMITS: StreamLimits = { firstByteMs: 120_000, idleMs: 120_000 };

/** Longest server-sent event buffered while incomplete: far above any real chunk. */
const MAX_EVENT_CHARS = 4 * 1024 * 1024;

/**
 * `postJson` for a streamed answer: the body is a stream of server-sent events, parsed
 * with eventsource-parser, each handed to `onEvent` as it arrives; resolves when the
 * stream ends. Failures are ProviderErrors as in `postJson` (an error `onEvent` throws
 * is passed on as it is, and the connection closed).
 */
export async function postJsonStream(
  options: PostJsonOptions & { limits?: StreamLimits },
  onEvent: (event: EventSourceMessage) => void,
): Promise<void> {
  const { label, url, signal } = options;
  const client = createOutboundClient({ label, secrets: options.secrets });
  const fail = (error: unknown): unknown => {
    if (signal.aborted) return abortReason(signal);
    if (!(error instanceof OutboundError)) return error;
    const transient = error.failure === 'status' ? undefined : true;
    return new ProviderError(client.redact(describe(error, label, url)), error.status, {
      transient,
      retryAfterMs: error.retryAfterMs,
    });
  };
  let answer: Awaited<ReturnType<typeof client.stream>>;
  try {
    answer = await client.stream(
      { url, headers: options.headers, json: options.body },
      options.limits ?? MODEL_STREAM_LIMITS,
      signal,
      (failed) => {
        const json = parse(failed.raw);
        return json === undefined ? undefined : options.errorMessage(json);
      },
    );
  } catch (error) {
    throw fail(error);
  }
  // What `onEvent` threw (or the parser found), set from the parser's callbacks.
  const outcome: { thrown?: { error: unknown } } = {};
  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onEvent: (event) => {
      if (outcome.thrown) return;
      try {
        onEvent(event);
      } catch (error) {
        outcome.thrown = { error };
      }
    },
    onError: (error) => {
      outcome.thrown ??= {
        error: new ProviderError(`${label}: the event stream is malformed (${error.type})`),
      };
    },
  });
  try {
    // Leaving the loop early closes the connection.
    for await (const piece of answer.text) {
      parser.feed(piece);
      if (outcome.thrown) break;
    }
    // A last event without its blank line still counts.
    if (!outcome.thrown) parser.reset({ consume: true });
  } catch (error) {
    throw fail(error);
  }
  if (outcome.thrown) throw outcome.thrown.error;
}

/** The message for `run.error`: fetch's "fetch failed" says nothing; the cause's code does. */
function describe(error: OutboundError, label: string, url: string): string {
  const code = error.code && error.code !== 'network error' ? ` (${error.code})` : '';
  if (error.failure === 'network' && error.duringAnswer) {
    return `${label}: connection to ${hostOf(url)} failed while reading the reply${code}`;
  }
  if (error.failure === 'network') return `${label}: could not reach ${hostOf(url)}${code}`;
  return error.message;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `https://host/v1/` → `https://host/v1`, so paths can be appended with one "/". */
export function trimSlash(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

/** The `error.message` both OpenAI (`{error:{message}}`) and Anthropic (`{type:"error", error:{message}}`) use. */
export function nestedErrorMessage(json: unknown): string | undefined {
  const error = (json as { error?: unknown } | null)?.error;
  if (typeof error === 'string' && error) return error;
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' && message ? message : undefined;
}
