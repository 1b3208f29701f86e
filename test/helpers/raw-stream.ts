/**
 * A streamed answer's client over a bare TCP socket (docs/callers.md, "Streamed answers"),
 * for the tests of a reader that stops reading: `pause()` stops taking bytes from the
 * kernel, so the gateway's writes meet a full socket, as with a client that never reads.
 * Everything received is kept; the HTTP head, the chunked body and the events are parsed
 * from it on demand.
 */
import { connect, type Socket } from 'node:net';
import { HOOK_TOKEN } from './gateway.js';

export interface RawEvent {
  event: string;
  // biome-ignore lint/suspicious/noExplicitAny: each test asserts the fields it expects
  data: any;
}

export interface RawStream {
  socket: Socket;
  /** Stops reading: the bytes stay in the kernel, then in the gateway. */
  pause(): void;
  resume(): void;
  /** Bytes received so far. */
  bytes(): number;
  /** The status code, once the head arrived (else undefined). */
  status(): number | undefined;
  /** A header of the answer (lower-case name), once the head arrived. */
  header(name: string): string | undefined;
  /** The body so far, de-chunked. */
  body(): string;
  /** The complete events so far. */
  events(): RawEvent[];
  /** Settles when the connection ends (the gateway closed it, or `destroy`). */
  closed: Promise<void>;
  /** Waits until `check` holds on what was received, or throws after `timeoutMs`. */
  until(check: (stream: RawStream) => boolean, what: string, timeoutMs?: number): Promise<void>;
  destroy(): void;
}

/** POSTs `body` to `path` on the gateway at `url` with `Accept: text/event-stream`. */
export function openRawStream(
  url: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): RawStream {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const payload = Buffer.from(JSON.stringify(body));
  const head = {
    host: `${hostname}:${port}`,
    authorization: `Bearer ${HOOK_TOKEN}`,
    accept: 'text/event-stream',
    'content-type': 'application/json',
    'content-length': String(payload.length),
    connection: 'close',
    ...headers,
  };
  const lines = Object.entries(head).map(([name, value]) => `${name}: ${value}`);
  socket.write(`POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
  socket.write(payload);
  const chunks: Buffer[] = [];
  let received = 0;
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    received += chunk.length;
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  let cache: { at: number; text: string } = { at: -1, text: '' };
  const all = () => {
    if (cache.at !== received) cache = { at: received, text: Buffer.concat(chunks).toString('latin1') };
    return cache.text;
  };
  const split = () => {
    const text = all();
    const end = text.indexOf('\r\n\r\n');
    return end < 0 ? undefined : { head: text.slice(0, end), rest: text.slice(end + 4) };
  };
  const stream: RawStream = {
    socket,
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    bytes: () => received,
    status() {
      const parts = split();
      return parts ? Number(parts.head.split(' ')[1]) : undefined;
    },
    header(name) {
      const parts = split();
      const line = parts?.head
        .split('\r\n')
        .find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
      return line?.slice(line.indexOf(':') + 1).trim();
    },
    body() {
      const parts = split();
      if (!parts) return '';
      const chunked = /^transfer-encoding:\s*chunked/im.test(parts.head);
      const raw = chunked ? dechunk(parts.rest) : parts.rest;
      return Buffer.from(raw, 'latin1').toString('utf8');
    },
    events() {
      return parseEvents(stream.body());
    },
    closed,
    async until(check, what, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!check(stream)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    destroy: () => socket.destroy(),
  };
  return stream;
}

/** The data of a chunked body, as far as it arrived complete. */
function dechunk(text: string): string {
  const out: string[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = text.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(text.slice(at, lineEnd), 16);
    if (!Number.isFinite(size) || size === 0) break;
    const start = lineEnd + 2;
    if (text.length < start + size) {
      out.push(text.slice(start));
      break;
    }
    out.push(text.slice(start, start + size));
    at = start + size + 2;
  }
  return out.join('');
}

/** The complete `event:`/`data:` blocks of a text/event-stream body (comments skipped). */
export function parseEvents(body: string): RawEvent[] {
  const blocks = body.split('\n\n');
  blocks.pop(); // the part after the last blank line is not complete yet
  const events: RawEvent[] = [];
  for (const block of blocks) {
    const name = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (name !== undefined && data !== undefined) events.push({ event: name, data: JSON.parse(data) });
  }
  return events;
}
