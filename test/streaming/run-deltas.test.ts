/**
 * The reply pieces' hub (streaming/run-deltas.ts): pieces reach subscribers at once in
 * this process, are buffered until a stream listens, are batched into notifications
 * for the other replicas (parts small enough for NOTIFY, in order), and a replica
 * ignores its own notifications.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { DeltaHub, MAX_PART_CHARS, splitParts } from '../../src/streaming/run-deltas.js';

const log = createLogger('silent');

describe('splitParts', () => {
  it('cuts at the limit and never between the halves of a surrogate pair', () => {
    expect(splitParts('abcdef', 4)).toEqual(['abcd', 'ef']);
    expect(splitParts('abc😀def', 4)).toEqual(['abc', '😀de', 'f']);
    expect(splitParts('', 4)).toEqual([]);
  });

  it('keeps every part under the 8000-byte NOTIFY limit, whatever the characters', () => {
    for (const unit of ['\u0001', '😀', '€', '"']) {
      const text = unit.repeat(5000);
      const parts = splitParts(text);
      expect(parts.join('')).toBe(text);
      for (const t of parts) {
        const payload = JSON.stringify({
          o: 'x'.repeat(40),
          r: `run_${'0'.repeat(36)}`,
          x: 'y'.repeat(36),
          t,
          at: Date.now(),
        });
        expect(Buffer.byteLength(payload)).toBeLessThan(8000);
      }
      expect(parts[0]?.length).toBeLessThanOrEqual(MAX_PART_CHARS);
    }
  });
});

describe('DeltaHub', () => {
  it('buffers pieces until the stream listens, then hands them over in order', () => {
    const hub = new DeltaHub({ replica: 'a', log });
    const subscription = hub.subscribe('run_1');
    const writer = hub.open('run_1');
    writer.push('one ');
    writer.push('two ');
    const got: string[] = [];
    subscription.listen((piece) => got.push(piece.text));
    writer.push('three');
    expect(got).toEqual(['one ', 'two ', 'three']);
    subscription.close();
    writer.push('gone');
    expect(got).toHaveLength(3);
  });

  it('batches pieces for the other replicas, which deliver them; its own come back ignored', async () => {
    const sent: string[] = [];
    const hubA = new DeltaHub({ replica: 'a', log, batchMs: 20, send: async (p) => void sent.push(p) });
    const hubB = new DeltaHub({ replica: 'b', log });
    const onB: string[] = [];
    hubB.subscribe('run_2').listen((piece) => onB.push(piece.text));
    const onA: string[] = [];
    hubA.subscribe('run_2').listen((piece) => onA.push(piece.text));
    const writer = hubA.open('run_2');
    writer.push('x');
    writer.push('y');
    writer.push('z'.repeat(MAX_PART_CHARS + 5));
    await writer.finish();
    // One batch, cut in two parts for NOTIFY.
    expect(sent).toHaveLength(2);
    for (const payload of sent) {
      hubA.receive(payload);
      hubB.receive(payload);
    }
    hubB.receive(undefined);
    hubB.receive('not json');
    expect(onA.join('')).toBe(`xy${'z'.repeat(MAX_PART_CHARS + 5)}`);
    expect(onB.join('')).toBe(onA.join(''));
    expect(hubB.recentDelays()).toHaveLength(2);
    expect(hubA.recentDelays()).toHaveLength(0);
  });

  it("announces a streamed run's end to the other replicas, which hand it on whether or not a stream follows its pieces", async () => {
    const sent: string[] = [];
    const endedOnA: string[] = [];
    const endedOnB: string[] = [];
    let missedOnB = 0;
    const hubA = new DeltaHub({
      replica: 'a',
      log,
      send: async (p) => void sent.push(p),
      onFinished: (runId) => endedOnA.push(runId),
    });
    const hubB = new DeltaHub({
      replica: 'b',
      log,
      onFinished: (runId) => endedOnB.push(runId),
      onMissed: () => {
        missedOnB += 1;
      },
    });
    hubA.finished('run_3');
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toHaveLength(1);
    for (const payload of sent) {
      hubA.receive(payload);
      hubB.receive(payload);
    }
    // B has no subscriber for run_3 (a replay's stream waits on the run, not its pieces).
    expect(endedOnB).toEqual(['run_3']);
    // Its own notice comes back to A, ignored: A's streams heard it from A's worker.
    expect(endedOnA).toEqual([]);
    // A re-opened listening connection: notices may have been lost.
    hubB.receive(undefined);
    expect(missedOnB).toBe(1);
  });
});
