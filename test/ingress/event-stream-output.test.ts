/**
 * A streamed answer's output (ingress/event-stream-output.ts) on a PassThrough that nobody
 * reads until the test says so: pieces written while the buffer is full are coalesced into
 * one delta; past the pending bound the stream catches up from the recorded reply; the
 * `finished` RunView written in slices parses to the same view; a reader that takes
 * nothing for the stall time is given up on, one that reads in time is not.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  EventStreamOutput,
  MAX_PENDING_CHARS,
  SLICE_CHARS,
  STREAM_BUFFER_BYTES,
} from '../../src/ingress/event-stream-output.js';
import type { RunView } from '../../src/store/types.js';
import { parseEvents } from '../helpers/raw-stream.js';
import { sleep } from '../helpers/wait.js';

function setup(stallMs = 60_000) {
  const out = new PassThrough({ highWaterMark: STREAM_BUFFER_BYTES });
  const stalls: string[] = [];
  const output = new EventStreamOutput(out, { stallMs, onStall: (reason) => stalls.push(reason) });
  const chunks: Buffer[] = [];
  const read = () => {
    out.on('data', (chunk: Buffer) => chunks.push(chunk));
  };
  const events = () => parseEvents(Buffer.concat(chunks).toString('utf8'));
  const joined = () =>
    events()
      .filter((e) => e.event === 'delta')
      .map((e) => e.data.text as string)
      .join('');
  const held = () => out.writableLength + out.readableLength;
  return { out, output, stalls, read, events, joined, held };
}

const view = (reply: string | null): RunView => ({
  runId: 'run_1',
  status: 'succeeded',
  agentId: 'main',
  sessionKey: 'hook:x',
  model: null,
  createdAt: '2025-01-01T00:00:00.000Z',
  startedAt: null,
  finishedAt: null,
  notBefore: null,
  reply,
  error: null,
  delivery: { status: 'none', channel: null, to: null, reason: null },
  callback: { status: 'none', attempts: 0 },
  tokenId: null,
  attachments: [],
  steps: 0,
  waitingFor: null,
  usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
});

describe('EventStreamOutput', () => {
  it('joins the pieces that arrive while the buffer is full into one delta, written when it drains', async () => {
    const { output, read, events, joined, held } = setup();
    const pieces = Array.from({ length: 60 }, (_, i) => `${i}:`.padEnd(1024, '.'));
    for (const piece of pieces) output.delta(piece);
    // Full after about two buffers' worth; the rest is pending, not buffered.
    expect(held()).toBeLessThan(3 * STREAM_BUFFER_BYTES);
    read();
    await output.complete(pieces.join(''));
    await output.end(Promise.resolve());
    expect(joined()).toBe(pieces.join(''));
    const deltas = events().filter((e) => e.event === 'delta');
    expect(deltas.length).toBeLessThan(pieces.length);
    // The first ones as they came; the pending ones as one.
    expect(deltas[0]?.data.text).toBe(pieces[0]);
    expect(String(deltas.at(-1)?.data.text ?? '').length).toBeGreaterThan(1024);
  });

  it('past the pending bound, drops the live text and sends the rest from the recorded reply', async () => {
    const { output, read, events, joined, held } = setup();
    const pieces = Array.from({ length: 200 }, (_, i) => `${i}:`.padEnd(1024, '-'));
    for (const piece of pieces) output.delta(piece);
    expect(held()).toBeLessThan(3 * STREAM_BUFFER_BYTES);
    const reply = pieces.join('');
    expect(reply.length).toBeGreaterThan(MAX_PENDING_CHARS);
    read();
    await output.complete(reply);
    await output.finished(view(reply));
    await output.end(Promise.resolve());
    expect(joined()).toBe(reply);
    // Caught up in slices, none over the slice size.
    const deltas = events().filter((e) => e.event === 'delta');
    expect(deltas.every((e) => (e.data.text as string).length <= SLICE_CHARS)).toBe(true);
    expect(events().at(-1)).toEqual({ event: 'finished', data: view(reply) });
  });

  it('does not complete the deltas from a reply they are not the start of (a takeover wrote another)', async () => {
    const { output, read, joined } = setup();
    output.delta('first execution ');
    read();
    await output.complete('another execution wrote this');
    await output.end(Promise.resolve());
    expect(joined()).toBe('first execution ');
  });

  it('writes a large RunView in slices that parse to the same view (escapes, astral characters)', async () => {
    const { output, read, events, held } = setup();
    const reply = 'quote " back\\slash \n newline 😀 emoji \u0001 control é '.repeat(4000);
    const finishing = output.finished(view(reply));
    await sleep(10);
    // The reply is not in the buffers at once: a slice at a time.
    expect(held()).toBeLessThan(STREAM_BUFFER_BYTES + 6 * SLICE_CHARS + 1024);
    read();
    await finishing;
    await output.end(Promise.resolve());
    expect(events()).toEqual([{ event: 'finished', data: view(reply) }]);
  });

  it('gives up on a reader that takes nothing for the stall time, not on one that reads in time', async () => {
    const stalled = setup(100);
    for (let i = 0; i < 40; i++) stalled.output.delta('x'.repeat(1024));
    await sleep(250);
    expect(stalled.stalls).toEqual(['stalled']);

    const reading = setup(100);
    for (let i = 0; i < 40; i++) reading.output.delta('x'.repeat(1024));
    await sleep(50);
    reading.read();
    await sleep(250);
    expect(reading.stalls).toEqual([]);
  });
});
