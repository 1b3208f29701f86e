/** A 2xx answer read as it arrives, under a first-byte and an idle limit (../outbound.ts). */
import { networkFailure, statusFailure } from './failures.js';
import {
  type ClientContext,
  type Describe,
  OutboundError,
  type OutboundRequest,
  type OutboundStream,
  type StreamLimits,
} from './types.js';
import { answerOf, fetchRequest } from './wire.js';

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

export async function stream(
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
