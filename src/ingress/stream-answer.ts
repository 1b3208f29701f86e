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
 * piece lost between replicas, a replay that saw none), so the deltas joined are the
 * reply — except after a takeover whose second execution wrote another reply (the
 * stream keeps to the first execution's pieces; `finished` has the reply). A client
 * that leaves ends only its stream: the run goes on.
 */
import { PassThrough } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { RunView } from '../store/types.js';
import type { DeltaSubscription } from '../streaming/run-deltas.js';
import { isFinished, type RunCompletions } from './run-completions.js';

/** Keep-alive comments at least this often: under the 15 s docs/callers.md promises, with room. */
export const STREAM_KEEP_ALIVE_MS = 10_000;

export interface StreamAnswerOptions {
  runId: string;
  /** The run's pieces; absent for a replay, which sends none live (docs/callers.md). */
  subscription?: DeltaSubscription;
  completions: RunCompletions;
  /** When the stream gives up waiting (ms since the epoch): `hooks.maxWaitSeconds` from now. */
  deadline: number;
  keepAliveMs: number;
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

/** One event: its name and a `data:` line of JSON (JSON.stringify never emits a newline). */
function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Sends the stream through Fastify (its onResponse hooks, metrics and spans, still run). */
export function streamAnswer(reply: FastifyReply, options: StreamAnswerOptions): FastifyReply {
  const out = new PassThrough();
  void pump(out, options);
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

async function pump(out: PassThrough, options: StreamAnswerOptions): Promise<void> {
  const { runId, subscription, completions } = options;
  const left = new AbortController();
  // Destroyed by Fastify when the client goes: only this stream ends.
  out.once('close', () => left.abort());
  const write = (text: string) => {
    if (!out.destroyed && !out.writableEnded) out.write(text);
  };
  let sent = '';
  let exec: string | undefined;
  write(event('accepted', { runId }));
  subscription?.listen((piece) => {
    // The first execution seen is the one followed (a takeover starts the reply over).
    exec ??= piece.exec;
    if (piece.exec !== exec) return;
    sent += piece.text;
    write(event('delta', { text: piece.text }));
  });
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), options.keepAliveMs);
  let view: RunView | undefined;
  try {
    [view] = await completions.wait([runId], options.deadline, left.signal);
  } catch {
    // The store could not be read: what was known before (just committed: queued).
    view = options.known ?? ({ status: 'queued' } as RunView);
  } finally {
    clearInterval(keepAlive);
    subscription?.close();
  }
  if (left.signal.aborted) return;
  if (view !== undefined && isFinished(view)) {
    const reply = view.reply;
    if (reply !== null && reply.length > sent.length && reply.startsWith(sent)) {
      write(event('delta', { text: reply.slice(sent.length) }));
    }
    write(event('finished', view));
  } else {
    write(event('timeout', { runId, status: view?.status ?? null }));
  }
  out.end();
}
