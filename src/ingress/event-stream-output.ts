/**
 * The bytes of a streamed answer (docs/callers.md, "Streamed answers"), written only as
 * fast as its reader takes them:
 *
 * - Each write honours the stream's backpressure: once `write()` says the buffer is full,
 *   nothing more is written until it drains — live deltas meanwhile join one pending text,
 *   written as one delta when it drains.
 * - The pending text is bounded (`MAX_PENDING_CHARS`): past it the stream drops it and
 *   falls back to catching up — no more live deltas; once the run finished, the rest of
 *   the reply is sent from the recorded reply (`complete`), so the deltas joined are still
 *   the reply for a reader that reads, however slowly.
 * - Large texts (a catch-up, the `finished` RunView's reply) go out in slices of
 *   `SLICE_CHARS`, each once the one before drained: the buffers never hold more than a
 *   slice of them.
 * - A reader that takes nothing for `stallMs` while output waits (or after the last event)
 *   has stalled: `onStall` is called once, and the caller closes the connection.
 *
 * What a stream holds, whatever the reply's length: at most `MAX_PENDING_CHARS` of pending
 * text, and the response's buffers — the PassThrough's two sides and the socket's, each up
 * to `STREAM_BUFFER_BYTES` plus the one event that filled it (a slice is at most 6 bytes
 * per character once JSON-escaped, 1 for ASCII).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import type { RunView } from '../store/types.js';

/** The PassThrough's high-water mark, both sides (Node 20's default; Node 22 doubled it to 64 KiB). */
export const STREAM_BUFFER_BYTES = 16 * 1024;
/** The most delta text a stream keeps while its reader is behind (UTF-16 units). */
export const MAX_PENDING_CHARS = 32 * 1024;
/** The largest piece of text written at once (UTF-16 units). */
export const SLICE_CHARS = 8 * 1024;

export interface EventStreamOutputOptions {
  /** How long output may wait on the reader before the stream counts as stalled. */
  stallMs: number;
  /** Aborted when the gateway stops: a reader that is behind then is not waited for. */
  stopping?: AbortSignal;
  /** Called when the reader stalled (or the gateway stops while it is behind); the caller ends the connection. */
  onStall: (reason: 'stalled' | 'stopping') => void;
}

/** One event: its name and a `data:` line of JSON (JSON.stringify never emits a newline). */
export function eventText(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

export class EventStreamOutput {
  /** Live delta text not yet written (the reader is behind). */
  private pending = '';
  /** Live text was dropped: the rest is sent from the recorded reply once the run finished. */
  private catchingUp = false;
  /** What the deltas written so far hold: their length, and a hash to check it against the reply. */
  private sentChars = 0;
  private readonly sentHash = createHash('sha256');
  private blocked = false;
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly waiters: (() => void)[] = [];

  constructor(
    private readonly out: Writable,
    private readonly options: EventStreamOutputOptions,
  ) {
    out.on('drain', () => this.drained());
    const stopping = options.stopping;
    const giveUpIfBehind = () => {
      if (this.blocked) this.abandon();
    };
    stopping?.addEventListener('abort', giveUpIfBehind, { once: true });
    out.once('close', () => {
      stopping?.removeEventListener('abort', giveUpIfBehind);
      this.clearStall();
      this.wake();
    });
  }

  /** The stream ended or the connection went: nothing more is written. */
  get closed(): boolean {
    return this.out.destroyed || this.out.writableEnded;
  }

  /** A small event, written at once (`accepted`, `timeout`). */
  event(name: string, data: unknown): void {
    this.write(eventText(name, data));
  }

  /** A comment for the proxies on the way; useless while bytes are waiting anyway. */
  keepAlive(): void {
    if (!this.blocked) this.write(': keep-alive\n\n');
  }

  /** A live piece of the reply: written now, joined to what is pending, or dropped (catching up). */
  delta(text: string): void {
    if (this.catchingUp || this.closed) return;
    this.pending += text;
    this.flushPending();
    if (this.pending.length > MAX_PENDING_CHARS) {
      this.pending = '';
      this.catchingUp = true;
    }
  }

  /** Resolves once the reader took what was written (or the stream closed). */
  async writable(): Promise<void> {
    while (this.blocked && !this.closed) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /**
   * The run finished with `reply` (null for none): the pending text, then — when the deltas
   * sent are the start of the reply — the rest of it, each slice as the reader takes it.
   */
  async complete(reply: string | null): Promise<void> {
    while (this.pending !== '' && !this.closed) {
      await this.writable();
      this.flushPending();
    }
    if (reply === null || reply.length <= this.sentChars || !this.sentIsStartOf(reply)) return;
    for (let at = this.sentChars; at < reply.length && !this.closed; ) {
      await this.writable();
      const end = sliceEnd(reply, at);
      this.writeDelta(reply.slice(at, end));
      at = end;
    }
  }

  /** The `finished` event with the RunView, its reply written in slices as the reader takes them. */
  async finished(view: RunView): Promise<void> {
    await this.writable();
    const reply = view.reply;
    if (reply === null || reply.length <= SLICE_CHARS) {
      this.event('finished', view);
      return;
    }
    // The view as JSON around a marker in the reply's place, so the reply is escaped slice by
    // slice: slices never split a surrogate pair, so their escapes join to the whole one's.
    const marker = `"reply-${randomUUID()}"`;
    const json = JSON.stringify({ ...view, reply: marker.slice(1, -1) });
    const at = json.indexOf(marker);
    this.write(`event: finished\ndata: ${json.slice(0, at)}"`);
    for (let start = 0; start < reply.length && !this.closed; ) {
      await this.writable();
      const end = sliceEnd(reply, start);
      this.write(JSON.stringify(reply.slice(start, end)).slice(1, -1));
      start = end;
    }
    await this.writable();
    this.write(`"${json.slice(at + marker.length)}\n\n`);
  }

  /**
   * Ends the stream once what is waiting was taken; the last bytes still count toward the
   * stall until the response has handed them all to the connection (`flushed`).
   */
  async end(flushed: Promise<void>): Promise<void> {
    await this.writable();
    if (this.closed) return;
    this.out.end();
    this.armStall();
    await flushed;
    this.clearStall();
  }

  /** Gives up on the reader now, as a stall does, without the wait. */
  private abandon(): void {
    this.clearStall();
    this.options.onStall('stopping');
  }

  private sentIsStartOf(reply: string): boolean {
    const start = createHash('sha256').update(reply.slice(0, this.sentChars), 'utf16le').digest('hex');
    return start === this.sentHash.copy().digest('hex');
  }

  private flushPending(): void {
    while (!this.blocked && this.pending !== '' && !this.closed) {
      const end = sliceEnd(this.pending, 0);
      const text = this.pending.slice(0, end);
      this.pending = this.pending.slice(end);
      this.writeDelta(text);
    }
  }

  private writeDelta(text: string): void {
    this.sentHash.update(text, 'utf16le');
    this.sentChars += text.length;
    this.write(eventText('delta', { text }));
  }

  private write(chunk: string): void {
    if (this.closed) return;
    if (!this.out.write(chunk)) {
      this.blocked = true;
      this.armStall();
    }
  }

  private drained(): void {
    this.blocked = false;
    this.clearStall();
    this.flushPending();
    this.wake();
  }

  private wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  private armStall(): void {
    if (this.blocked && this.options.stopping?.aborted) {
      this.abandon();
      return;
    }
    this.stallTimer ??= setTimeout(() => {
      this.stallTimer = undefined;
      this.options.onStall('stalled');
    }, this.options.stallMs);
  }

  private clearStall(): void {
    clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }
}

/** Where a slice of `text` from `start` ends: at most SLICE_CHARS on, never inside a surrogate pair. */
function sliceEnd(text: string, start: number): number {
  let end = Math.min(text.length, start + SLICE_CHARS);
  const last = text.charCodeAt(end - 1);
  if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return end;
}
