/**
 * What streams waiting on their runs cost the store (docs/callers.md, "Streamed answers";
 * ingress/run-completions.ts): nothing per stream. 500 streams over real sockets wait on
 * queued runs (no workers) while every store read is counted: no stream reads its run,
 * and the one safety poll reads all of their runs in one query per tick. A run finished
 * with no signal at all (recorded straight into the store, as a replica whose notice was
 * lost would) still ends its stream, through that poll.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunCompletion } from '../../src/store/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { openRawStream, type RawStream } from '../helpers/raw-stream.js';
import { sleep, waitFor } from '../helpers/wait.js';

const STREAMS = 500;
const SAFETY_POLL_MS = 1000;
const agentBody = (message: string) => ({ message, deliver: false, wakeMode: 'next-heartbeat' });

describe('streams waiting on queued runs', () => {
  let gw: TestGateway;
  const streams: RawStream[] = [];
  const calls = { getRun: 0, unfinishedRuns: 0, idsPerPoll: [] as number[] };

  beforeAll(async () => {
    gw = await startTestGateway(
      { hooks: { maxWaitSeconds: 120, streams: { maxPerToken: 1000, max: 1000 } } },
      { workers: false, streamSafetyPollMs: SAFETY_POLL_MS },
    );
    // Every read the gateway makes of its runs, counted (the ingress holds this same object).
    const store = gw.gateway.store;
    const getRun = store.getRun.bind(store);
    store.getRun = (runId) => {
      calls.getRun += 1;
      return getRun(runId);
    };
    const unfinishedRuns = store.unfinishedRuns?.bind(store);
    store.unfinishedRuns = (runIds) => {
      calls.unfinishedRuns += 1;
      calls.idsPerPoll.push(runIds.length);
      return unfinishedRuns(runIds);
    };
  });
  afterAll(async () => {
    for (const stream of streams) stream.destroy();
    await gw?.stop();
  });

  it('500 waiting streams: no read of their own, one shared read per safety tick', async () => {
    for (let i = 0; i < STREAMS; i++) {
      streams.push(openRawStream(gw.url, '/hooks/agent', agentBody(`waiting ${i}`)));
    }
    await waitFor(
      () => streams.every((s) => s.body().includes('event: accepted')),
      'every stream to be accepted',
      60_000,
      100,
    );
    expect((await gw.gateway.store.counts()).runsQueued).toBe(STREAMS);
    calls.getRun = 0;
    calls.unfinishedRuns = 0;
    calls.idsPerPoll.length = 0;
    await sleep(2.5 * SAFETY_POLL_MS);
    // Each stream would have read its run every 500 ms: 2,500 reads in this window.
    expect(calls.getRun).toBe(0);
    expect(calls.unfinishedRuns).toBeGreaterThanOrEqual(1);
    expect(calls.unfinishedRuns).toBeLessThanOrEqual(3);
    expect(calls.idsPerPoll.every((n) => n === STREAMS)).toBe(true);
    // Still open and waiting: nothing but keep-alives to send.
    expect(streams.every((s) => s.events().length === 1)).toBe(true);
  }, 120_000);

  it('a run finished without any signal ends its stream through the shared poll', async () => {
    const stream = streams[0] as RawStream;
    const runId = stream.events()[0]?.data.runId as string;
    const store = gw.gateway.store;
    // Play a worker that records the run and tells no one (its notice lost).
    const claimed = await store.runs.claimRuns('lost-notice', Date.now(), 60_000, STREAMS);
    const run = claimed.find((r) => r.id === runId);
    if (!run) throw new Error('the run was not claimed');
    const finishedAt = Date.now();
    const completion: RunCompletion = {
      runId,
      owner: 'lost-notice',
      sessionKey: run.sessionKey,
      status: 'succeeded',
      reply: 'recorded elsewhere',
      error: null,
      finishedAt,
      transcript: [],
      summary: {
        id: `evt_lost_${finishedAt}`,
        sessionKey: run.mainSessionKey,
        text: 'done',
        source: `run:${runId}`,
        wakeMode: 'next-heartbeat',
        ts: finishedAt,
      },
      delivery: { status: 'none', channel: null, to: null, reason: null },
    };
    expect(await store.runs.completeRun(completion)).toBe(true);
    await stream.closed;
    const events = stream.events();
    expect(events.map((e) => e.event)).toEqual(['accepted', 'delta', 'finished']);
    expect(events[1]?.data).toEqual({ text: 'recorded elsewhere' });
    expect(events[2]?.data).toMatchObject({ runId, status: 'succeeded', reply: 'recorded elsewhere' });
    // Within a tick of the poll (and some slack for the machine).
    expect(Date.now() - finishedAt).toBeLessThan(SAFETY_POLL_MS + 1500);
  }, 30_000);
});
