/**
 * A streamed answer (docs/callers.md, "Streamed answers"): a `POST {hooks.path}/agent`
 * with `Accept: text/event-stream`, once its run is committed, is answered
 * 200 `text/event-stream` with
 *
 *     event: accepted   data: {"runId"}
 *     event: delta      data: {"text"}        (as the model streams; joined, the reply)
 *     event: finished   data: <the RunView>   (as GET {hooks.path}/runs/{id} gives it)
 *   or
 *     event: timeout    data: {"runId","status"}   (past hooks.maxWaitSeconds; the run goes on)
 *
 * and a `: keep-alive` comment every `keepAliveMs` (10 s). When the run finished, the
 * deltas sent are completed from its recorded reply when they are the start of it (a
 * piece lost between replicas, a replay that saw none, a reader too far behind: see
 * event-stream-output.ts), so the deltas joined are the reply — except after a takeover
 * whose second execution wrote another reply (the stream keeps to the first execution's
 * pieces; `finished` has the reply). A client that leaves, or whose reader stalls past
 * `hooks.streams.stallSeconds`, ends only its stream: the run goes on.
 *
 * A stream learns that its run finished from the completion signal (run-completions.ts),
 * never by polling the store itself; it reads the run once, when it finished and the reader
 * has taken what was sent — a reader that stopped reading never costs a RunView in memory.
 */
import type { ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { Logger } from '../log.js';
import type { RunView } from '../store/types.js';
import type { DeltaSubscription } from '../streaming/run-deltas.js';
import { EventStreamOutput, STREAM_BUFFER_BYTES } from './event-stream-output.js';
import { isFinished, type RunCompletions } from './run-completions.js';

/** Keep-alive comments at least this often: under the 15 s docs/callers.md promises, with room. */
export const STREAM_KEEP_ALIVE_MS = 10_000;

export interface StreamAnswerOptions {
  runId: string;
  /** The run's pieces; absent for a replay, which sends none live (docs/callers.md). */
  subscription?: DeltaSubscription;
  completions: RunCompletions;
  /** Reads the run (the store's `getRun`). */
  read: (runId: string) => Promise<RunView | undefined>;
  /** When the stream gives up waiting (ms since the epoch): `hooks.maxWaitSeconds` from now. */
  deadline: number;
  keepAliveMs: number;
  /** `hooks.streams.stallSeconds`, in ms: a reader that takes nothing that long is cut off. */
  stallMs: number;
  log: Logger;
  /**
   * The run as known before the stream opened, for when the store cannot be read
   * meanwhile: a replay's read, else `queued` (just committed).
   */
  known?: RunView;
}

/** Whether an `Accept` header asks for `text/event-stream` (and not with q=0). */
export function wantsEventStream(accept: string | string[] | undefined): boolean {
  // Every hook request asks: most send no Accept, or one without the type.
  if (accept === undefined || (typeof accept === 'string' && !/event-stream/i.test(accept))) return false;
  const values = Array.isArray(accept) ? accept : accept === undefined ? [] : [accept];
  return values
    .flatMap((value) => value.split(','))
    .some((range) => {
      const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
      if (type !== 'text/event-stream') return false;
      const q = params.find((param) => param.startsWith('q='));
      return q === undefined || Number(q.slice(2)) > 0;
    });
}

/** Sends the stream through Fastify (its onResponse hooks, metrics and spans, still run). */
export function streamAnswer(reply: FastifyReply, options: StreamAnswerOptions): FastifyReply {
  const out = new PassThrough({ highWaterMark: STREAM_BUFFER_BYTES });
  void pump(out, reply.raw, options);
  return (
    reply
      .code(200)
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-cache, no-transform')
      // Proxies that buffer (nginx) pass each event on at once.
      .header('x-accel-buffering', 'no')
      .send(out)
  );
}

async function pump(out: PassThrough, response: ServerResponse, options: StreamAnswerOptions): Promise<void> {
  const { runId, subscription } = options;
  const left = new AbortController();
  // Destroyed by Fastify when the client goes (or its reader stalled): only this stream ends.
  out.once('close', () => left.abort());
  const flushed = new Promise<void>((resolve) => response.once('close', resolve));
  const output = new EventStreamOutput(out, {
    stallMs: options.stallMs,
    stopping: options.completions.stopping,
    onStall: (reason) => {
      options.log.info(
        { runId, stallSeconds: options.stallMs / 1000 },
        reason === 'stalled'
          ? 'stream ended: its reader took nothing for hooks.streams.stallSeconds (the run goes on)'
          : 'stream ended: the gateway stops and its reader is behind (the run goes on)',
      );
      response.destroy();
    },
  });
  output.event('accepted', { runId });
  let exec: string | undefined;
  subscription?.listen((piece) => {
    // The first execution seen is the one followed (a takeover starts the reply over).
    exec ??= piece.exec;
    if (piece.exec === exec) output.delta(piece.text);
  });
  const keepAlive = setInterval(() => output.keepAlive(), options.keepAliveMs);
  let view: RunView | undefined;
  try {
    view = await finalView(options, output, left.signal);
  } finally {
    clearInterval(keepAlive);
    subscription?.close();
  }
  if (left.signal.aborted || output.closed) return;
  if (view !== undefined && isFinished(view)) {
    await output.complete(view.reply);
    await output.finished(view);
  } else {
    await output.writable();
    output.event('timeout', { runId, status: view?.status ?? null });
  }
  await output.end(flushed);
}

/**
 * The run once it finished, or as it stands when the deadline passed or the gateway stops;
 * undefined when the client left. Read once the reader has taken what was sent.
 */
async function finalView(
  options: StreamAnswerOptions,
  output: EventStreamOutput,
  left: AbortSignal,
): Promise<RunView | undefined> {
  const { runId, completions, known } = options;
  // A replay of a finished run: nothing to wait for.
  if (known !== undefined && isFinished(known)) return known;
  for (;;) {
    const finished = await completions.whenFinished(runId, options.deadline, left);
    await output.writable();
    if (left.aborted || output.closed) return undefined;
    let view: RunView | undefined;
    try {
      view = await options.read(runId);
    } catch {
      // The store could not be read: what was known before (just committed: queued).
      return known ?? ({ status: 'queued' } as RunView);
    }
    // Told finished, yet not read so (a notice ahead of this replica's snapshot): wait on.
    if (!finished || isFinished(view)) return view;
  }
}
