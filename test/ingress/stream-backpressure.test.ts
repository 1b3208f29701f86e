/**
 * Streamed answers against readers that stop reading (docs/callers.md, "Streamed answers"),
 * over bare TCP sockets that stop taking bytes (`pause()`), with the real worker on SQLite
 * and a loopback fake of OpenAI streaming an 8 MiB reply as fast as it can:
 *
 * - what the gateway buffers for such a stream — the PassThrough it answers with (both
 *   sides) and the response's own buffer, read from the real objects — stays under the
 *   bound docs/callers.md gives, while the reply streams and after the run finished;
 * - a reader that then reads everything still gets deltas that join to the reply, and
 *   `finished` with the RunView;
 * - a reader that takes nothing for `hooks.streams.stallSeconds` is cut off, and its run
 *   goes on to succeed.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openRawStream, type RawStream } from '../helpers/raw-stream.js';
import { sleep, waitFor } from '../helpers/wait.js';

const PIECES = 1024;
/** Piece i: its number, then filler to 8 KiB — 8 MiB in all, more than loopback's socket buffers hold. */
const piece = (i: number) => `p${i}:`.padEnd(8 * 1024, 'x');
const REPLY = Array.from({ length: PIECES }, (_, i) => piece(i)).join('');
/** docs/callers.md: what a stream buffers, whatever the reply's length (ASCII text: well under it). */
const BUFFER_BOUND_BYTES = 256 * 1024;

const agentBody = (message: string) => ({ message, deliver: false, wakeMode: 'next-heartbeat' });

/** What the gateway holds for one streamed answer: the source piped into the response, and the response. */
interface HeldAnswer {
  res: ServerResponse;
  source?: Duplex;
  closedAt?: number;
}

const buffered = (held: HeldAnswer): number =>
  (held.source ? held.source.writableLength + held.source.readableLength : 0) + held.res.writableLength;

/** A gateway whose streams are cut off after `stallSeconds`, and every streamed answer it sends. */
function gatewayWithStreams(stallSeconds: number) {
  const context: { llm?: FakeOpenAi; gw?: TestGateway; answers: HeldAnswer[] } = { answers: [] };
  beforeAll(async () => {
    context.llm = await startFakeOpenAi({
      apiKey: 'sk-test',
      streamDelayMs: 0,
      reply: () => ({ stream: Array.from({ length: PIECES }, (_, i) => piece(i)) }),
    });
    context.gw = await startTestGateway(
      {
        hooks: { maxWaitSeconds: 60, streams: { stallSeconds } },
        models: {
          providers: { fake: { api: 'openai-chat', baseUrl: context.llm.baseUrl, apiKey: 'sk-test' } },
        },
        agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
      },
      { workers: true },
    );
    context.gw.gateway.app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (req.headers.accept !== 'text/event-stream') return;
      const held: HeldAnswer = { res };
      context.answers.push(held);
      res.on('pipe', (source: Duplex) => {
        held.source = source;
      });
      res.on('close', () => {
        held.closedAt = Date.now();
      });
    });
  });
  afterAll(async () => {
    await context.gw?.stop();
    await context.llm?.close();
  });

  const runStatus = async (runId: string): Promise<string> => {
    const response = await fetch(`${context.gw?.url}/hooks/runs/${runId}`, {
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    });
    return ((await response.json()) as { status: string }).status;
  };
  /** Opens a stream, waits for its `accepted` event, then stops reading. */
  const openPaused = async (
    message: string,
  ): Promise<{ stream: RawStream; held: HeldAnswer; runId: string }> => {
    const count = context.answers.length;
    const stream = openRawStream(context.gw?.url as string, '/hooks/agent', agentBody(message));
    await stream.until((s) => s.body().includes('event: accepted'), 'the accepted event');
    stream.pause();
    const held = context.answers[count] as HeldAnswer;
    const runId = stream.events()[0]?.data.runId as string;
    return { stream, held, runId };
  };
  return { runStatus, openPaused, stop: () => context.gw?.stop() };
}

describe('a reader that stops reading, then reads', () => {
  // Longer than the run: the reader is behind, never stalled long enough to be cut off.
  const { runStatus, openPaused } = gatewayWithStreams(60);

  it('keeps what it buffers under the bound while the reader does not read, then gives a reader that reads all of the reply', async () => {
    const { stream, held, runId } = await openPaused('a paused reader');
    let most = 0;
    const sampler = setInterval(() => {
      most = Math.max(most, buffered(held));
    }, 5);
    try {
      await waitFor(async () => (await runStatus(runId)) === 'succeeded', 'the run to finish', 30_000);
      // The stream has been told the run finished: it must not fill the buffers with the rest either.
      await sleep(300);
    } finally {
      clearInterval(sampler);
    }
    most = Math.max(most, buffered(held));
    expect(held.source).toBeDefined();
    expect(most).toBeLessThan(BUFFER_BOUND_BYTES);
    console.log(`most buffered for a reader that does not read: ${(most / 1024).toFixed(0)} KiB`);
    expect(held.closedAt).toBeUndefined();

    // It reads again: everything arrives, the deltas join to the reply, then `finished`.
    stream.resume();
    await stream.closed;
    const events = stream.events();
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('accepted');
    expect(names.at(-1)).toBe('finished');
    expect(names.slice(1, -1).every((name) => name === 'delta')).toBe(true);
    const joined = events
      .filter((e) => e.event === 'delta')
      .map((e) => e.data.text as string)
      .join('');
    expect(joined.length).toBe(REPLY.length);
    expect(joined === REPLY).toBe(true);
    const finished = events.at(-1)?.data;
    expect(finished).toMatchObject({ runId, status: 'succeeded' });
    expect(finished.reply === REPLY).toBe(true);
  }, 60_000);
});

describe('a reader that never reads again', () => {
  const { runStatus, openPaused } = gatewayWithStreams(1);

  it('ends a stream whose reader takes nothing for hooks.streams.stallSeconds; the run goes on', async () => {
    const { stream, held, runId } = await openPaused('a reader that never reads');
    const started = Date.now();
    // The reply is far larger than the socket buffers: the reader is behind, then stalled.
    await waitFor(() => held.closedAt !== undefined, 'the gateway to end the stalled stream', 20_000);
    const closedAfter = (held.closedAt as number) - started;
    expect(closedAfter).toBeGreaterThanOrEqual(1000);
    expect(closedAfter).toBeLessThan(8000);
    // The run was not touched: it finishes with its whole reply.
    await waitFor(async () => (await runStatus(runId)) === 'succeeded', 'the run to finish', 30_000);
    // What the reader gets once it reads: part of the stream, no `finished`; then the end.
    stream.resume();
    await stream.closed;
    const names = stream.events().map((e) => e.event);
    expect(names[0]).toBe('accepted');
    expect(names).not.toContain('finished');
  }, 60_000);
});

describe('a gateway that stops while a reader is behind', () => {
  const { runStatus, openPaused, stop } = gatewayWithStreams(60);

  it('ends that stream at once instead of waiting out hooks.streams.stallSeconds', async () => {
    const { held, runId } = await openPaused('behind when the gateway stops');
    await waitFor(async () => (await runStatus(runId)) === 'succeeded', 'the run to finish', 30_000);
    // Behind: the stream holds output its reader has not taken.
    expect(buffered(held)).toBeGreaterThan(0);
    const stopping = Date.now();
    await stop();
    expect(Date.now() - stopping).toBeLessThan(5000);
    // Its connection was ended by the stop ('close' follows within the event loop's next turns).
    expect(held.res.destroyed).toBe(true);
    await waitFor(() => held.closedAt !== undefined, 'the stream to end', 3000);
  }, 60_000);
});
