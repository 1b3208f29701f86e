/**
 * Store conformance for the `committed(kind)` signal (src/store/committed.ts;
 * docs/architecture.md, "Background loops"), the same tests for every driver
 * (drivers.ts): each commit that makes work due signals its kind once it has
 * committed, a commit that makes nothing due signals nothing, a group commit
 * signals each kind once, and an unsubscribed listener hears nothing more.
 * PostgreSQL also carries `runs` from one store to another on the same database
 * (two replicas).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { WorkKind } from '../../src/store/committed.js';
import type { Action, NewRun, RunCompletion, Store } from '../../src/store/types.js';
import { waitFor } from '../helpers/wait.js';
import { DRIVERS } from './drivers.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const LEASE = 60_000;
const KINDS: WorkKind[] = ['runs', 'outbox', 'callbacks', 'events'];
let counter = 0;
const nextId = (prefix: string) => `${prefix}_sig${String(++counter).padStart(6, '0')}`;
const render = () => ({ status: 202, body: '{}' });

function agent(overrides: Partial<NewRun> = {}): Action & { kind: 'agent' } {
  return {
    kind: 'agent',
    run: {
      id: nextId('run'),
      agentId: 'main',
      sessionKey: nextId('hook:sig'),
      mainSessionKey: MAIN,
      name: null,
      message: 'm',
      model: null,
      thinking: null,
      timeoutSeconds: 600,
      wakeMode: 'next-heartbeat',
      deliver: false,
      channel: 'telegram',
      to: '42',
      allowUnsafeExternalContent: false,
      source: 'hook:agent',
      createdAt: T0,
      ...overrides,
    },
  };
}

function wake(wakeMode: 'now' | 'next-heartbeat', sessionKey = MAIN): Action {
  return {
    kind: 'wake',
    event: { id: nextId('evt'), sessionKey, text: 'ping', source: 'hook:wake', wakeMode, ts: T0 },
  };
}

function completion(run: NewRun, over: Partial<RunCompletion> = {}): RunCompletion {
  return {
    runId: run.id,
    owner: 'worker',
    sessionKey: run.sessionKey,
    status: 'succeeded',
    reply: 'done',
    error: null,
    finishedAt: T0 + 5000,
    transcript: [],
    summary: {
      id: nextId('evt'),
      sessionKey: MAIN,
      text: 'Hook: done',
      source: `run:${run.id}`,
      wakeMode: run.wakeMode,
      ts: T0 + 5000,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
    ...over,
  };
}

/**
 * Every signal of `kinds` that `store` gives, in order, as `kind` or `kind:key,key`. (On
 * PostgreSQL a store also hears its own commits' NOTIFY as `runs`, some time later: tests
 * that look at the other kinds leave `runs` out.)
 */
function record(store: Store, kinds = KINDS): { heard: string[]; stop: () => void } {
  const heard: string[] = [];
  const stops = kinds.map((kind) =>
    store.committed.on(kind, (keys) => heard.push(keys ? `${kind}:${keys.join(',')}` : kind)),
  );
  return {
    heard,
    stop: () => {
      for (const stop of stops) stop();
    },
  };
}

describe.each(DRIVERS)('Store conformance, the committed signal: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  it('an accept signals runs for its runs and events for its wake-now events, by session', async () => {
    const { heard } = record(store);
    await store.accept([wake('next-heartbeat')], render);
    expect(heard).toEqual([]);
    await store.accept([agent(), wake('now'), wake('now', 'agent:other:main')], render);
    // Heard by the time the accept resolves: the loop's look finds the work committed. (On
    // PostgreSQL the store's own NOTIFY may come back as one more `runs`.)
    expect([...new Set(heard)]).toEqual(['runs', `events:${MAIN},agent:other:main`]);
  });

  it("a run's end signals its delivery, its callback and its wake; a release signals runs", async () => {
    const delivered = agent({ deliver: true, wakeMode: 'now' });
    const released = agent();
    await store.accept([delivered, released], render);
    await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
    const { heard } = record(store, ['outbox', 'callbacks', 'events']);
    const pending = { status: 'pending' as const, channel: 'telegram', to: '42', reason: null };
    const outcome = await store.runs.completeAndClaim(completion(delivered.run, { delivery: pending }), {
      now: T0 + 5000,
      leaseMs: LEASE,
      limit: 0,
    });
    expect(outcome.recorded).toBe(true);
    expect(heard).toEqual(['outbox', 'callbacks', `events:${MAIN}`]);
    heard.length = 0;
    // Recorded twice: the second is refused and signals nothing.
    expect(await store.runs.completeRun(completion(delivered.run))).toBe(false);
    expect(heard).toEqual([]);
    const runs = record(store, ['runs']);
    expect(await store.runs.releaseRun(released.run.id, 'worker')).toBe(true);
    expect(runs.heard[0]).toBe('runs');
  });

  it("a delivery's end signals the callback of its run; redelivering signals the outbox", async () => {
    const { run } = agent({ deliver: true });
    await store.accept([{ kind: 'agent', run }], render);
    await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
    const pending = { status: 'pending' as const, channel: 'telegram', to: '42', reason: null };
    await store.runs.completeRun(completion(run, { delivery: pending }));
    const [item] = await store.outbox.deliveryHeads(10);
    if (!item) throw new Error('no delivery head');
    const { heard } = record(store, ['outbox', 'callbacks', 'events']);
    await store.outbox.finishDelivery(
      item,
      { status: 'delivered', channel: 'telegram', to: '42', reason: null },
      T0 + 6000,
    );
    expect(heard).toEqual(['callbacks']);
    heard.length = 0;
    expect(await store.admin.redeliverRun(run.id, T0 + 7000)).toBe('enqueued');
    expect(heard).toEqual(['outbox']);
  });

  it('a group commit signals each kind once, with the keys of all it holds', async () => {
    const { heard } = record(store, ['outbox', 'callbacks', 'events']);
    const mains = ['agent:a:main', 'agent:b:main', MAIN];
    // Submitted in one turn: one group commit.
    await Promise.all(mains.map((key) => store.accept([wake('now', key)], render)));
    expect(heard).toEqual([`events:${mains.join(',')}`]);
    const runs = [agent({ wakeMode: 'now' }), agent({ wakeMode: 'now' })];
    await store.accept(runs, render);
    await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
    heard.length = 0;
    const recorded = await Promise.all(runs.map(({ run }) => store.runs.completeRun(completion(run))));
    expect(recorded).toEqual([true, true]);
    expect(heard).toEqual(['callbacks', `events:${MAIN}`]);
  });

  it('an unsubscribed listener hears nothing more', async () => {
    const { heard, stop } = record(store);
    stop();
    await store.accept([agent(), wake('now')], render);
    expect(heard).toEqual([]);
  });

  it('runs committed on one store reach another on the same database (replicas), once per batch', async (context) => {
    if (!driver.replicas) return context.skip();
    const other = driver.open();
    let woken = 0;
    other.committed.on('runs', () => woken++);
    await (other as { listening?: () => Promise<void> }).listening?.();
    await Promise.all(Array.from({ length: 20 }, () => store.accept([agent()], render)));
    await waitFor(() => woken > 0, 'the other store to hear the runs', 5000, 5);
    expect(woken).toBeLessThan(20); // one NOTIFY per group commit, not per row
    // Nothing of the other kinds crosses: each replica works through its own outbox signals.
    const { heard } = record(other);
    await store.accept([wake('now')], render);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heard).toEqual([]);
  });
});
