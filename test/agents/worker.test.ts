/**
 * The run worker (src/agents/worker.ts) on its own: the real SQLite store, the
 * loopback OpenAI fake holding each call until the test answers it, and a
 * manual clock, so timeouts, the stop grace and leases take no real time.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  COMPLETION_RETRY_DELAYS_MS,
  MAX_INTERRUPTED_ATTEMPTS,
  RunWorker,
  type WorkerDeps,
} from '../../src/agents/worker.js';
import { StoreUnavailableError } from '../../src/store/types.js';
import { HeldProvider, NO_RETRY, queueRun, type Rig, rig, silentLog } from '../helpers/agent-rig.js';
import { waitFor } from '../helpers/wait.js';

const OWNER = 'test-host:1:worker';
const LEASE_MS = 60_000;

let llm: HeldProvider;
let setup: Rig;
let worker: RunWorker;
let heartbeats: string[];
let deliveries: number;

beforeAll(async () => {
  llm = await HeldProvider.start();
});
afterAll(() => llm.close());

afterEach(async () => {
  const stopping = worker?.stop(0);
  await setup.clock.advance(0);
  await stopping;
  for (const call of llm.calls) call.answer('late');
  llm.calls.length = 0;
  llm.inFlight = 0;
  llm.maxInFlight = 0;
  await setup.close();
});

function startWorker(maxConcurrent = 4): RunWorker {
  setup = rig(llm.fake.baseUrl, { defaults: { maxConcurrent } });
  heartbeats = [];
  deliveries = 0;
  // The worker no longer pokes delivery and heartbeats: its completion's commit signals them.
  setup.store.committed.on('outbox', () => deliveries++);
  setup.store.committed.on('events', (sessionKeys) => heartbeats.push(...(sessionKeys ?? [])));
  worker = new RunWorker(workerDeps());
  return worker;
}

function workerDeps(): WorkerDeps {
  return {
    store: setup.store,
    config: setup.config,
    models: setup.models,
    log: silentLog,
    owner: OWNER,
    leaseMs: LEASE_MS,
    providerRetry: NO_RETRY,
    clock: setup.clock,
  };
}

const statusOf = async (runId: string) => (await setup.store.getRun(runId))?.status;
const settled = (runId: string, status: string) =>
  waitFor(
    async () => {
      const run = await setup.store.getRun(runId);
      return run?.status === status ? run : undefined;
    },
    `run ${runId} to be ${status}`,
    5000,
    5,
  );

describe('run worker', () => {
  it('runs at most maxConcurrent runs at once, and the next when one finishes', async () => {
    startWorker(2);
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push(await queueRun(setup.store));
    await worker.start();
    await llm.received(2);
    worker.notify();
    await setup.clock.advance(5_000); // polls come and go: still no third claim
    expect(await Promise.all(runs.map((r) => statusOf(r.id)))).toEqual([
      'running',
      'running',
      'queued',
      'queued',
    ]);
    expect(llm.calls).toHaveLength(2);

    const first = llm.calls[0];
    first?.answer('one');
    await llm.received(3);
    const answered = runs.find((r) => r.message === first?.text);
    expect(await statusOf(answered?.id as string)).toBe('succeeded');
    expect(llm.calls[2]?.text).toBe(runs[2]?.message);
    expect(await statusOf(runs[3]?.id as string)).toBe('queued');
    expect(llm.maxInFlight).toBe(2);
  });

  it('runs the runs of one session key one at a time, in the order the store accepted them', async () => {
    startWorker(4);
    const runs = [];
    for (let i = 0; i < 3; i++)
      runs.push(await queueRun(setup.store, { sessionKey: 'hook:same', message: `m${i}` }));
    await worker.start();
    for (let i = 0; i < 3; i++) {
      const call = await llm.received(i + 1);
      expect(call.text).toBe(`m${i}`);
      expect(llm.inFlight).toBe(1);
      call.answer(`r${i}`);
      await settled(runs[i]?.id as string, 'succeeded');
    }
    expect(llm.maxInFlight).toBe(1);
    // Each turn saw the ones before it: the transcript is the session's, in order.
    expect(llm.calls[2]?.body.messages.map((m) => m.content)).toEqual(['m0', 'r0', 'm1', 'r1', 'm2']);
  });

  it('retries recording a result the store refused: the model is called once, the key goes on at once', async () => {
    startWorker(4);
    const first = await queueRun(setup.store, { sessionKey: 'hook:refused', message: 'm0' });
    const second = await queueRun(setup.store, { sessionKey: 'hook:refused', message: 'm1' });
    const runs = setup.store.runs;
    const completeAndClaim = runs.completeAndClaim.bind(runs);
    let refusals = 2;
    runs.completeAndClaim = async (completion, claim) => {
      if (refusals-- > 0) throw new StoreUnavailableError(new Error('database is locked'));
      return completeAndClaim(completion, claim);
    };
    await worker.start();
    (await llm.received(1)).answer('r0');
    await waitFor(() => refusals === 1 || undefined, 'the first refusal');
    expect(await statusOf(first.id)).toBe('running');
    await setup.clock.advance(COMPLETION_RETRY_DELAYS_MS[0] as number);
    await waitFor(() => refusals === 0 || undefined, 'the second refusal');
    await setup.clock.advance(COMPLETION_RETRY_DELAYS_MS[1] as number);
    await settled(first.id, 'succeeded');
    // The key's next run starts from the completion's own claim, not after a lease ran out.
    const call = await llm.received(2);
    expect(call.text).toBe('m1');
    call.answer('r1');
    await settled(second.id, 'succeeded');
    expect(llm.calls.map((c) => c.text)).toEqual(['m0', 'm1']);
    expect((await setup.store.getRun(first.id))?.reply).toBe('r0');
  });

  it('gives up recording after the last retry, leaving the run to its lease', async () => {
    startWorker(1);
    const run = await queueRun(setup.store);
    const runs = setup.store.runs;
    let refusals = 0;
    runs.completeAndClaim = async () => {
      refusals++;
      throw new StoreUnavailableError(new Error('disk I/O error'));
    };
    await worker.start();
    (await llm.received(1)).answer('lost');
    for (const [retry, delay] of COMPLETION_RETRY_DELAYS_MS.entries()) {
      await waitFor(() => refusals > retry || undefined, `refusal ${retry + 1}`);
      await setup.clock.advance(delay);
    }
    await waitFor(() => refusals === COMPLETION_RETRY_DELAYS_MS.length + 1 || undefined, 'the last refusal');
    expect(await statusOf(run.id)).toBe('running');
  });

  it('times a run out after its timeoutSeconds on the clock, aborting the provider call', async () => {
    startWorker();
    const run = await queueRun(setup.store, { timeoutSeconds: 30 });
    await worker.start();
    await llm.received(1);
    const aborted = llm.fake.nextAbort();
    await setup.clock.advance(29_999);
    expect(await statusOf(run.id)).toBe('running');
    await setup.clock.advance(1);
    const done = await settled(run.id, 'timed_out');
    expect(done.error).toBe('timed out after 30 s');
    expect((await aborted).aborted).toBe(true);
  });

  it('on stop, lets a run finish within the grace period', async () => {
    startWorker();
    const run = await queueRun(setup.store);
    await worker.start();
    const call = await llm.received(1);
    const stopped = worker.stop(10_000);
    await setup.clock.advance(9_000);
    call.answer('made it');
    await stopped;
    expect(await statusOf(run.id)).toBe('succeeded');
  });

  it('on stop, aborts a run still going when the grace is over and puts it back in the queue', async () => {
    startWorker();
    const run = await queueRun(setup.store);
    const later = await queueRun(setup.store);
    await worker.start();
    await llm.received(2);
    let stopped = false;
    const stopping = worker.stop(10_000).then(() => {
      stopped = true;
    });
    await setup.clock.advance(9_999);
    expect(stopped).toBe(false);
    await setup.clock.advance(1);
    await stopping;
    expect(await statusOf(run.id)).toBe('queued');
    expect(await statusOf(later.id)).toBe('queued');
    // Released, not failed: the next claim gets it back (same attempt count as a fresh lease + 1).
    const [again] = await setup.store.runs.claimRuns('next-owner', setup.clock.now(), LEASE_MS, 1);
    expect(again?.id).toBe(run.id);
  });

  it(`fails a run interrupted ${MAX_INTERRUPTED_ATTEMPTS} times without calling the model again`, async () => {
    startWorker();
    const crashed = await queueRun(setup.store, { wakeMode: 'now' });
    // Three processes claimed it and died holding it: their leases (1 ms) ran out.
    for (let i = 0; i < MAX_INTERRUPTED_ATTEMPTS; i++) {
      const [claim] = await setup.store.runs.claimRuns(`dead:${i}`, i * 10, 1, 1);
      expect(claim?.attempts).toBe(i + 1);
    }
    await worker.start();
    const done = await settled(crashed.id, 'failed');
    expect(done.error).toMatch(`stopped unexpectedly ${MAX_INTERRUPTED_ATTEMPTS} times`);
    expect(llm.calls).toHaveLength(0);
    expect(heartbeats).toEqual(['agent:main:main']); // its summary still wakes the session
  });

  it(`still runs a run interrupted ${MAX_INTERRUPTED_ATTEMPTS - 1} times`, async () => {
    startWorker();
    const run = await queueRun(setup.store);
    for (let i = 0; i < MAX_INTERRUPTED_ATTEMPTS - 1; i++)
      await setup.store.runs.claimRuns(`dead:${i}`, i * 10, 1, 1);
    await worker.start();
    (await llm.received(1)).answer('third time');
    expect((await settled(run.id, 'succeeded')).reply).toBe('third time');
  });

  it('does not count a clean stop (release after the grace) as an interruption', async () => {
    startWorker();
    const run = await queueRun(setup.store);
    for (let i = 0; i < MAX_INTERRUPTED_ATTEMPTS - 1; i++) {
      await setup.store.runs.claimRuns(`dead:${i}`, i * 10, 1, 1);
    }
    await worker.start();
    await llm.received(1); // the last attempt the cap allows
    const stopping = worker.stop(1_000);
    await setup.clock.advance(1_000);
    await stopping;
    expect(await statusOf(run.id)).toBe('queued');

    const next = new RunWorker({ ...workerDeps(), owner: 'test-host:2:next' });
    await next.start();
    (await llm.received(2)).answer('done after the clean stop');
    try {
      expect((await settled(run.id, 'succeeded')).reply).toBe('done after the clean stop');
    } finally {
      await next.stop(60_000);
    }
  });

  it('renews the leases of running runs, so another owner cannot take them', async () => {
    startWorker();
    const run = await queueRun(setup.store, { timeoutSeconds: 600 });
    await worker.start();
    await llm.received(1);
    await setup.clock.advance(LEASE_MS); // three renewals of a third of the lease each
    expect(await setup.store.runs.claimRuns('other', setup.clock.now() + 1, LEASE_MS, 1)).toEqual([]);
    expect(await statusOf(run.id)).toBe('running');
  });

  it('discards a result that arrives after its lease was lost to another owner', async () => {
    startWorker();
    const run = await queueRun(setup.store, { wakeMode: 'now', deliver: true, channel: 'last' });
    await worker.start();
    const call = await llm.received(1);
    // The lease ran out without a renewal (this process was frozen); another owner took the run.
    const [taken] = await setup.store.runs.claimRuns('other', setup.clock.now() + LEASE_MS + 1, LEASE_MS, 1);
    expect(taken?.id).toBe(run.id);
    call.answer('too late');
    await worker.stop(60_000); // returns once the run's bookkeeping is done; the clock never reaches the grace
    const view = await setup.store.getRun(run.id);
    expect(view?.status).toBe('running');
    expect(view?.reply).toBeNull();
    expect(heartbeats).toEqual([]);
    expect(deliveries).toBe(0);
  });
});
