/**
 * The heartbeat scheduler (src/heartbeat/scheduler.ts) on its own: the real
 * SQLite store, the loopback OpenAI fake holding each call until the test
 * answers it, and a manual clock, so coalescing, periodic beats and timeouts
 * take no real time.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HEARTBEAT_MARKER, HEARTBEAT_OK } from '../../src/agents/heartbeat-protocol.js';
import { ProviderLimits } from '../../src/agents/provider-limits.js';
import { COALESCE_MS, HeartbeatScheduler } from '../../src/heartbeat/scheduler.js';
import { HeldProvider, NO_RETRY, queueEvent, type Rig, rig, silentLog } from '../helpers/agent-rig.js';
import { settle } from '../helpers/manual-clock.js';
import { sleep, waitFor } from '../helpers/wait.js';

const MAIN = 'agent:main:main';

let llm: HeldProvider;
let setup: Rig;
let scheduler: HeartbeatScheduler;
let deliveries: number;

beforeAll(async () => {
  llm = await HeldProvider.start();
});
afterAll(() => llm.close());

afterEach(async () => {
  const stopping = scheduler?.stop(0);
  await setup.clock.advance(0);
  await stopping;
  for (const call of llm.calls) call.answer('late');
  llm.calls.length = 0;
  llm.inFlight = 0;
  llm.maxInFlight = 0;
  await setup.close();
});

function startScheduler(defaults: Record<string, unknown> = {}, limits?: ProviderLimits): HeartbeatScheduler {
  setup = rig(llm.fake.baseUrl, { defaults });
  deliveries = 0;
  // The scheduler no longer pokes delivery: the heartbeat's commit signals it.
  setup.store.committed.on('outbox', () => deliveries++);
  scheduler = new HeartbeatScheduler({
    store: setup.store,
    config: setup.config,
    models: setup.models,
    log: silentLog,
    providerRetry: NO_RETRY,
    clock: setup.clock,
    ...(limits ? { limits } : {}),
  });
  return scheduler;
}

const heartbeats = () => setup.store.sessions.listHeartbeats(MAIN, 50);
const pending = async () => (await setup.store.sessions.pendingEvents(MAIN, 50)).map((e) => e.text);
/** Waits until `count` heartbeats are recorded; returns them, newest first. */
const recorded = (count: number) =>
  waitFor(
    async () => {
      const list = await heartbeats();
      return list.length >= count ? list : undefined;
    },
    `${count} recorded heartbeats`,
    5000,
    5,
  );
/** Gives real I/O a moment, to show that nothing more happens (a call would take a few ms). */
const quiet = () => sleep(50).then(settle);

describe('heartbeat scheduler', () => {
  it("waits for its provider's slot under maxConcurrent: a heartbeat's call counts with the runs'", async () => {
    const limits = new ProviderLimits(() => 1, { now: () => setup.clock.now() });
    startScheduler({}, limits);
    // A run's call holds the provider's only slot.
    const release = await limits.acquire('fake', new AbortController().signal);
    await queueEvent(setup.store, 'disk full');
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    await quiet();
    expect(llm.calls).toHaveLength(0);
    release();
    const call = await llm.received(1);
    expect(limits.inFlight('fake')).toBe(1);
    call.answer(HEARTBEAT_OK);
    await recorded(1);
    expect(limits.inFlight('fake')).toBe(0);
  });

  it(`coalesces the requests of ${COALESCE_MS} ms into one heartbeat`, async () => {
    startScheduler();
    await queueEvent(setup.store, 'first');
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(100);
    scheduler.request(MAIN);
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS - 101);
    await quiet();
    expect(llm.calls).toHaveLength(0);
    await setup.clock.advance(1);
    const call = await llm.received(1);
    expect(call.text.startsWith(HEARTBEAT_MARKER)).toBe(true);
    expect(call.text).toContain('first');
    call.answer(HEARTBEAT_OK);
    await recorded(1);
    await setup.clock.advance(10 * COALESCE_MS);
    await quiet();
    expect(llm.calls).toHaveLength(1);
  });

  it('never runs two heartbeats of a session at once, and runs one more after requests during a run', async () => {
    startScheduler();
    await queueEvent(setup.store, 'before');
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    const first = await llm.received(1);

    await queueEvent(setup.store, 'during');
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    scheduler.request(MAIN);
    await setup.clock.advance(10 * COALESCE_MS);
    await quiet();
    expect(llm.calls).toHaveLength(1);

    first.answer(HEARTBEAT_OK);
    await recorded(1);
    await setup.clock.advance(COALESCE_MS);
    const second = await llm.received(2);
    expect(second.text).toContain('during');
    expect(second.text).not.toContain('before'); // consumed by the first
    second.answer(HEARTBEAT_OK);
    await recorded(2);
    await setup.clock.advance(10 * COALESCE_MS);
    await quiet();
    expect(llm.calls).toHaveLength(2);
    expect(llm.maxInFlight).toBe(1);
  });

  it('beats every heartbeat.every on the clock', async () => {
    startScheduler({ heartbeat: { every: '30m' } });
    await queueEvent(setup.store, 'waiting');
    await scheduler.start();
    await setup.clock.advance(30 * 60_000 - 1);
    await quiet();
    expect(llm.calls).toHaveLength(0);
    await setup.clock.advance(1 + COALESCE_MS);
    (await llm.received(1)).answer('Looked at it.');
    await recorded(1);
    await queueEvent(setup.store, 'another');
    await setup.clock.advance(30 * 60_000);
    (await llm.received(2)).answer(HEARTBEAT_OK);
    await recorded(2);
  });

  it('runs at start the heartbeats that pending "now" events are owed', async () => {
    startScheduler();
    await queueEvent(setup.store, 'urgent', { wakeMode: 'now' });
    await scheduler.start();
    await setup.clock.advance(COALESCE_MS);
    (await llm.received(1)).answer(HEARTBEAT_OK);
    await recorded(1);
  });

  it('does not deliver a reply that is only an acknowledgement, and consumes the events', async () => {
    startScheduler();
    await queueEvent(setup.store, 'fyi');
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    (await llm.received(1)).answer(HEARTBEAT_OK);
    const [beat] = await recorded(1);
    expect(beat?.status).toBe('succeeded');
    expect(beat?.delivery.status).toBe('skipped');
    expect(deliveries).toBe(0);
    expect(await pending()).toEqual([]);
  });

  it('delivers any other reply to the last route', async () => {
    startScheduler();
    await queueEvent(setup.store, 'act on this');
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    (await llm.received(1)).answer('Done: acted on it.');
    const [beat] = await recorded(1);
    expect(beat?.delivery).toMatchObject({ status: 'pending', channel: 'last' });
    expect(deliveries).toBe(1);
    expect(await pending()).toEqual([]);
  });

  it('leaves the events pending when the turn fails', async () => {
    startScheduler();
    await queueEvent(setup.store, 'keep me');
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    (await llm.received(1)).answer({ status: 400, error: 'bad request' });
    const [beat] = await recorded(1);
    expect(beat?.status).toBe('failed');
    expect(beat?.error).toContain('bad request');
    expect(deliveries).toBe(0);
    expect(await pending()).toEqual(['keep me']);
  });

  it('fails a turn that outlasts timeoutSeconds on the clock, leaving the events pending', async () => {
    startScheduler({ timeoutSeconds: 120 });
    await queueEvent(setup.store, 'slow');
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    await llm.received(1);
    const aborted = llm.fake.nextAbort();
    await setup.clock.advance(120_000);
    const [beat] = await recorded(1);
    expect(beat?.error).toBe('timed out after 120 s');
    expect((await aborted).aborted).toBe(true);
    expect(await pending()).toEqual(['slow']);
  });

  it('on stop, aborts a heartbeat past the grace and records nothing; its events stay pending', async () => {
    startScheduler();
    await queueEvent(setup.store, 'interrupted');
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    await llm.received(1);
    const stopping = scheduler.stop(5_000);
    await setup.clock.advance(5_000);
    await stopping;
    expect(await heartbeats()).toEqual([]);
    expect(await pending()).toEqual(['interrupted']);
    scheduler.request(MAIN); // stopped: ignored
    expect(setup.clock.pending).toBe(0);
  });

  it('skips the turn when there is nothing to look at', async () => {
    startScheduler();
    await scheduler.start();
    scheduler.request(MAIN);
    await setup.clock.advance(COALESCE_MS);
    await quiet();
    expect(llm.calls).toHaveLength(0);
    expect(await heartbeats()).toEqual([]);
  });
});
