/**
 * A client of streamed answers (docs/callers.md, "Streamed answers") for tests: POSTs with
 * `Accept: text/event-stream` over real HTTP and parses what comes back with
 * eventsource-parser, recording each event (its `data` parsed as JSON), each comment, and
 * when it arrived.
 */
import { createParser } from 'eventsource-parser';
import { type Answer, HOOK_TOKEN, readAnswer } from './gateway.js';

export interface StreamEvent {
  event: string;
  // biome-ignore lint/suspicious/noExplicitAny: each test asserts the fields it expects
  data: any;
  /** ms since the epoch when the client parsed it. */
  at: number;
}

export interface OpenStream {
  status: number;
  headers: Headers;
  events: StreamEvent[];
  comments: string[];
  /** Settles when the server ends the stream (or the client aborted). */
  ended: Promise<void>;
  /** The first event named `name`, waiting for it if need be. */
  next(name: string, timeoutMs?: number): Promise<StreamEvent>;
  /** The client leaves: closes the connection. */
  abort(): void;
  /** The deltas' texts joined. */
  joined(): string;
}

/** POSTs `body` to `url` asking for a stream; a JSON answer (an error) comes back as an Answer. */
export async function postStream(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<OpenStream | Answer> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${HOOK_TOKEN}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    return readAnswer(response);
  }
  const events: StreamEvent[] = [];
  const comments: string[] = [];
  const waiters: (() => void)[] = [];
  const changed = () => {
    for (const wake of waiters.splice(0)) wake();
  };
  const parser = createParser({
    onEvent: (message) => {
      events.push({ event: message.event ?? 'message', data: JSON.parse(message.data), at: Date.now() });
      changed();
    },
    onComment: (comment) => {
      comments.push(comment);
      changed();
    },
  });
  let done = false;
  const ended = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        parser.feed(decoder.decode(chunk, { stream: true }));
      }
    } catch {
      // aborted by the client
    } finally {
      done = true;
      changed();
    }
  })();
  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    ended,
    async next(name, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = events.find((e) => e.event === name);
        if (found) return found;
        if (done) throw new Error(`the stream ended without a "${name}" event`);
        if (Date.now() > deadline) throw new Error(`no "${name}" event within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
    abort: () => controller.abort(),
    joined: () =>
      events
        .filter((e) => e.event === 'delta')
        .map((e) => e.data.text as string)
        .join(''),
  };
}

export function isStream(answer: OpenStream | Answer): answer is OpenStream {
  return 'events' in answer;
}
