/**
 * The reply pieces of streamed runs (docs/callers.md, "Streamed answers"), carried from
 * the worker executing a run to the request holding its stream.
 *
 * - In this process the worker's pieces reach the run's subscribers at once.
 * - Across replicas (PostgreSQL; docs/postgres.md) they are batched per run — sent at
 *   most `batchMs` (50 ms) after the first piece of a batch — and published with NOTIFY;
 *   each replica LISTENs and hands what it receives to its own subscribers of that run,
 *   and ignores its own. A notification's payload is limited to 8000 bytes: a batch is
 *   cut into parts of at most `MAX_PART_CHARS` UTF-16 units (6 bytes each at worst,
 *   JSON-escaped), sent one after another, so they arrive in order.
 * - A subscription made before its run is committed buffers what arrives before the
 *   stream is ready to take it, so no piece is missed.
 *
 * - Once a streamed run's result is committed, the replica that ran it publishes a
 *   notice that it finished (`finished`); the other replicas hand it to `onFinished`, so a
 *   stream waiting on another replica learns it at once rather than by reading the store
 *   (ingress/run-completions.ts).
 *
 * Each execution of a run has its own id (`exec`): a run taken over after its replica
 * died (or handed back by a stop) starts over, and a stream keeps to the first
 * execution it saw (the ingress decides). Pieces are best effort: a piece lost (a
 * LISTEN connection that broke, a NOTIFY that failed) is not sent again; the stream's
 * `finished` event carries the whole reply.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log.js';

/** One piece of a run's reply, as a subscriber gets it. */
export interface DeltaPiece {
  text: string;
  /** The execution of the run that produced it. */
  exec: string;
}

export interface DeltaSubscription {
  /** Sets the receiver; the pieces that arrived before are handed to it at once, in order. */
  listen(listener: (piece: DeltaPiece) => void): void;
  close(): void;
}

/** The worker's side, for one execution of one run. */
export interface RunDeltaWriter {
  push(text: string): void;
  /** Sends what is still batched; settles once every part was handed to the database (never rejects). */
  finish(): Promise<void>;
}

export interface DeltaHubOptions {
  /** This process's id: its own notifications come back to it, and are ignored. */
  replica: string;
  /**
   * Publishes a payload to every replica (the store's `replicas.sendDelta`); absent when this
   * process is the only replica (`replicas.shared` false): nothing is then batched to send.
   */
  send?: (payload: string) => Promise<void>;
  batchMs?: number;
  log: Logger;
  /** Another replica committed the result of streamed run `runId`. */
  onFinished?: (runId: string) => void;
  /** The listening connection was re-opened: notices may have been lost meanwhile. */
  onMissed?: () => void;
}

/** What travels in a notification: a part of a reply, or the notice that a run finished. */
type Wire = WirePart | WireFinished;

interface WireFinished {
  o: string;
  r: string;
  /** Finished: its result is committed. */
  f: 1;
}

interface WirePart {
  /** Sending replica. */
  o: string;
  /** Run id. */
  r: string;
  /** Execution id. */
  x: string;
  t: string;
  /** When the batch was sent (ms since the epoch), for the delay figures. */
  at: number;
}

export const DELTA_BATCH_MS = 50;
/** UTF-16 units per notification part: 6 bytes each at worst once JSON-escaped, well under 8000 bytes. */
export const MAX_PART_CHARS = 1000;
/** How many cross-replica delays `recentDelays` keeps. */
const DELAYS_KEPT = 1000;

interface Subscriber {
  buffered: DeltaPiece[];
  listener?: (piece: DeltaPiece) => void;
}

export class DeltaHub {
  private readonly subscribers = new Map<string, Set<Subscriber>>();
  private readonly delays: number[] = [];

  constructor(private readonly options: DeltaHubOptions) {}

  /** Follows `runId`'s pieces until `close`. */
  subscribe(runId: string): DeltaSubscription {
    const subscriber: Subscriber = { buffered: [] };
    let set = this.subscribers.get(runId);
    if (!set) {
      set = new Set();
      this.subscribers.set(runId, set);
    }
    set.add(subscriber);
    const subscribers = this.subscribers;
    return {
      listen(listener) {
        subscriber.listener = listener;
        const buffered = subscriber.buffered;
        subscriber.buffered = [];
        for (const piece of buffered) listener(piece);
      },
      close() {
        const current = subscribers.get(runId);
        current?.delete(subscriber);
        if (current?.size === 0) subscribers.delete(runId);
      },
    };
  }

  /** Starts one execution of a streamed run (the worker). */
  open(runId: string): RunDeltaWriter {
    const exec = randomUUID();
    const { send, log } = this.options;
    const batchMs = this.options.batchMs ?? DELTA_BATCH_MS;
    let batch = '';
    let timer: NodeJS.Timeout | undefined;
    let chain: Promise<void> = Promise.resolve();
    const flush = () => {
      clearTimeout(timer);
      timer = undefined;
      if (!send || batch === '') return;
      const text = batch;
      batch = '';
      const at = Date.now();
      const payloads = splitParts(text).map((t) =>
        JSON.stringify({ o: this.options.replica, r: runId, x: exec, t, at } satisfies WirePart),
      );
      // One after another, so the parts arrive in order.
      chain = chain.then(async () => {
        for (const payload of payloads) {
          await send(payload).catch((error) =>
            log.debug({ err: error, runId }, 'publishing a streamed reply piece failed'),
          );
        }
      });
    };
    return {
      push: (text) => {
        if (text === '') return;
        this.deliver(runId, { text, exec });
        if (!send) return;
        batch += text;
        timer ??= setTimeout(flush, batchMs);
      },
      finish: () => {
        flush();
        return chain;
      },
    };
  }

  /**
   * The worker committed streamed run `runId`'s result: the other replicas are told (this
   * one's streams learn it from the worker directly). Best effort, as the pieces are.
   */
  finished(runId: string): void {
    const { send, log, replica } = this.options;
    if (!send) return;
    const notice: WireFinished = { o: replica, r: runId, f: 1 };
    send(JSON.stringify(notice)).catch((error) =>
      log.debug({ err: error, runId }, 'publishing that a streamed run finished failed'),
    );
  }

  /** A notification from the database (undefined after a reconnect: some may be lost). */
  receive(payload: string | undefined): void {
    if (payload === undefined) {
      this.options.onMissed?.();
      return;
    }
    let wire: Wire;
    try {
      wire = JSON.parse(payload) as Wire;
    } catch {
      return;
    }
    if (wire.o === this.options.replica) return;
    // Whether or not a stream here follows its pieces: a replay's stream waits for it too.
    if ('f' in wire) {
      this.options.onFinished?.(wire.r);
      return;
    }
    const part = wire;
    if (!this.subscribers.has(part.r)) return;
    this.delays.push(Date.now() - part.at);
    if (this.delays.length > DELAYS_KEPT) this.delays.shift();
    this.deliver(part.r, { text: part.t, exec: part.x });
  }

  /** Publish-to-receipt delays of the last pieces received from other replicas, in ms (docs/postgres.md). */
  recentDelays(): number[] {
    return [...this.delays];
  }

  private deliver(runId: string, piece: DeltaPiece): void {
    const set = this.subscribers.get(runId);
    if (!set) return;
    for (const subscriber of set) {
      if (subscriber.listener) subscriber.listener(piece);
      else subscriber.buffered.push(piece);
    }
  }
}

/** `text` in parts of at most MAX_PART_CHARS units, never splitting a surrogate pair. */
export function splitParts(text: string, max = MAX_PART_CHARS): string[] {
  const parts: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + max);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    parts.push(text.slice(start, end));
    start = end;
  }
  return parts;
}
