/**
 * Store conformance for completion callbacks (docs/callers.md), the same tests for
 * every driver (drivers.ts): a callback is written with its run, due only once
 * the run's result is final (at completion, or when its delivery settles),
 * leased per attempt, retried at its time, ended once, and shown on RunView.
 * PostgreSQL also runs the replica tests: one attempt per callback across two
 * stores on one database, and a dead replica's lease taken over at expiry.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Action, CallbackItem, NewRun, RunCompletion, Store } from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const LEASE = 60_000;
let counter = 0;
const nextId = (prefix: string) => `${prefix}_cb${String(++counter).padStart(6, '0')}`;

function agent(overrides: Partial<NewRun> = {}): Action & { kind: 'agent' } {
  return {
    kind: 'agent',
    run: {
      id: nextId('run'),
      agentId: 'main',
      sessionKey: nextId('hook:cb'),
      mainSessionKey: MAIN,
      name: null,
      message: 'm',
      model: null,
      thinking: null,
      timeoutSeconds: 600,
      wakeMode: 'now',
      deliver: false,
      channel: 'last',
      to: null,
      allowUnsafeExternalContent: false,
      source: 'hook:agent',
      createdAt: T0,
      callbackUrl: 'https://ci.example.com/done',
      ...overrides,
    },
  };
}

const render = () => ({ status: 202, body: '{}' });

function completion(run: NewRun, owner: string, over: Partial<RunCompletion> = {}): RunCompletion {
  return {
    runId: run.id,
    owner,
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
      wakeMode: 'next-heartbeat',
      ts: T0 + 5000,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
    ...over,
  };
}

/** Accepts the run, runs it as `worker` and completes it. */
async function finished(store: Store, run: NewRun, over: Partial<RunCompletion> = {}): Promise<void> {
  await store.accept([{ kind: 'agent', run }], render);
  const claimed = await store.runs.claimRuns('worker', T0 + 1000, LEASE, 100);
  expect(claimed.map((c) => c.id)).toContain(run.id);
  expect(await store.runs.completeRun(completion(run, 'worker', over))).toBe(true);
}

describe.each(DRIVERS)('Store conformance, completion callbacks: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  it('a run without callbackUrl shows "none"; with one, "pending" from acceptance and not due before it finishes', async () => {
    const plain = agent({ callbackUrl: null });
    const withCallback = agent();
    await store.accept([plain, withCallback], render);
    expect((await store.getRun(plain.run.id))?.callback).toEqual({ status: 'none', attempts: 0 });
    expect((await store.getRun(withCallback.run.id))?.callback).toEqual({ status: 'pending', attempts: 0 });
    expect(await store.callbacks.claimCallbacks('cb', T0 + 10 * LEASE, LEASE, 10)).toEqual([]);
  });

  it('becomes due when the run completes with nothing to deliver, once, with a msg_ webhook id', async () => {
    const { run } = agent();
    await finished(store, run);
    expect(await store.callbacks.claimCallbacks('cb', T0 + 4999, LEASE, 10)).toEqual([]);
    const [item] = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 10);
    expect(item).toEqual({
      id: expect.stringMatching(/^msg_/),
      runId: run.id,
      url: 'https://ci.example.com/done',
      attempts: 0,
      armedAt: T0 + 5000,
      nextAttemptAt: T0 + 5000,
      body: null,
      traceParent: null,
    } satisfies CallbackItem);
    // Leased: the same owner is not handed it again while the attempt runs.
    expect(await store.callbacks.claimCallbacks('cb', T0 + 5001, LEASE, 10)).toEqual([]);
  });

  it('with a delivery to make, becomes due only when the delivery settles', async () => {
    const { run } = agent({ deliver: true, channel: 'telegram', to: '42' });
    await finished(store, run, {
      delivery: { status: 'pending', channel: 'telegram', to: '42', reason: null },
    });
    expect(await store.callbacks.claimCallbacks('cb', T0 + 10_000, LEASE, 10)).toEqual([]);
    const [delivery] = await store.outbox.deliveryHeads(10);
    if (!delivery) throw new Error('no delivery enqueued');
    await store.outbox.finishDelivery(
      delivery,
      { status: 'failed', channel: 'telegram', to: '42', reason: 'x' },
      T0 + 20_000,
    );
    const [item] = await store.callbacks.claimCallbacks('cb', T0 + 20_000, LEASE, 10);
    expect(item).toMatchObject({ runId: run.id, armedAt: T0 + 20_000 });
  });

  // docs/tracing.md: the run's span is continued by its reply's delivery and by its callback.
  const RUN_SPAN = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it("carries the run span's traceparent when the completion makes it due", async () => {
    const { run } = agent();
    await finished(store, run, { traceParent: RUN_SPAN });
    const [item] = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 10);
    expect(item?.traceParent).toBe(RUN_SPAN);
  });

  it("carries it through the delivery when the delivery's settling makes it due", async () => {
    const { run } = agent({ deliver: true, channel: 'telegram', to: '42' });
    await finished(store, run, {
      delivery: { status: 'pending', channel: 'telegram', to: '42', reason: null },
      traceParent: RUN_SPAN,
    });
    const [delivery] = await store.outbox.deliveryHeads(10);
    expect(delivery?.traceParent).toBe(RUN_SPAN);
    if (!delivery) throw new Error('no delivery enqueued');
    await store.outbox.finishDelivery(
      delivery,
      { status: 'delivered', channel: 'telegram', to: '42', reason: null },
      T0 + 20_000,
    );
    const [item] = await store.callbacks.claimCallbacks('cb', T0 + 20_000, LEASE, 10);
    expect(item).toMatchObject({ runId: run.id, traceParent: RUN_SPAN });
  });

  it('a retry records the attempt and body, frees the lease and is due again at its time; finishing shows on RunView', async () => {
    const { run } = agent();
    await finished(store, run);
    const [item] = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 10);
    if (!item) throw new Error('not due');
    const body = '{"type":"run.finished"}';
    expect(
      await store.callbacks.retryCallback(item, 'cb', {
        attempts: 1,
        body,
        error: 'HTTP 503',
        now: T0 + 6000,
        nextAttemptAt: T0 + 11_000,
      }),
    ).toBe(true);
    expect((await store.getRun(run.id))?.callback).toEqual({ status: 'pending', attempts: 1 });
    expect(await store.callbacks.claimCallbacks('cb', T0 + 10_999, LEASE, 10)).toEqual([]);
    const [again] = await store.callbacks.claimCallbacks('cb', T0 + 11_000, LEASE, 10);
    expect(again).toMatchObject({ id: item.id, attempts: 1, body, nextAttemptAt: T0 + 11_000 });
    if (!again) return;
    // Only the lease holder records a result.
    expect(
      await store.callbacks.finishCallback(again, 'someone-else', {
        attempts: 2,
        body,
        error: null,
        now: T0 + 12_000,
        status: 'delivered',
      }),
    ).toBe(false);
    expect(
      await store.callbacks.finishCallback(again, 'cb', {
        attempts: 2,
        body,
        error: null,
        now: T0 + 12_000,
        status: 'delivered',
      }),
    ).toBe(true);
    expect((await store.getRun(run.id))?.callback).toEqual({ status: 'delivered', attempts: 2 });
    expect(await store.callbacks.claimCallbacks('cb', T0 + 10 * 24 * 3600_000, LEASE, 10)).toEqual([]);
    // Ended once: a second finish changes nothing.
    expect(
      await store.callbacks.finishCallback(again, 'cb', {
        attempts: 3,
        body,
        error: 'x',
        now: T0 + 13_000,
        status: 'failed',
      }),
    ).toBe(false);
    expect((await store.getRun(run.id))?.callback).toEqual({ status: 'delivered', attempts: 2 });
  });

  it("ends as failed; pruning old finished callbacks keeps the run's outcome", async () => {
    const { run } = agent();
    await finished(store, run);
    const [item] = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 10);
    if (!item) throw new Error('not due');
    await store.callbacks.finishCallback(item, 'cb', {
      attempts: 1,
      body: '{}',
      error: 'HTTP 404',
      now: T0 + 6000,
      status: 'failed',
    });
    expect((await store.getRun(run.id))?.callback).toEqual({ status: 'failed', attempts: 1 });
    await store.pruneIdempotency(T0 + 8 * 24 * 3600_000);
    expect((await store.getRun(run.id))?.callback).toEqual({ status: 'failed', attempts: 1 });
  });

  it('admin.listCallbacks: newest first, the URL as its origin only, status filters (waiting shows as pending)', async () => {
    const waiting = agent({ callbackUrl: 'https://ci.example.com:8443/builds/42/done?key=s3cret' });
    await store.accept([waiting], render);

    const { run: failing } = agent({ callbackUrl: 'https://hooks.example.org/agentgate?token=abc' });
    await finished(store, failing);
    const [failed] = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 10);
    if (!failed) throw new Error('not due');
    const error = 'HTTP 500 Internal Server Error\n<html>oops</html>';
    await store.callbacks.finishCallback(failed, 'cb', {
      attempts: 1,
      body: '{}',
      error,
      now: T0 + 6000,
      status: 'failed',
    });

    const { run: fine } = agent();
    await finished(store, fine);
    const [sent] = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 10);
    if (!sent) throw new Error('not due');
    await store.callbacks.finishCallback(sent, 'cb', {
      attempts: 1,
      body: '{}',
      error: null,
      now: T0 + 7000,
      status: 'delivered',
    });

    const all = await store.admin.listCallbacks({ limit: 10 });
    expect(all).toEqual([
      {
        id: sent.id,
        runId: fine.id,
        origin: 'https://ci.example.com',
        status: 'delivered',
        attempts: 1,
        lastError: null,
        createdAt: expect.any(String),
        updatedAt: new Date(T0 + 7000).toISOString(),
      },
      {
        id: failed.id,
        runId: failing.id,
        origin: 'https://hooks.example.org',
        status: 'failed',
        attempts: 1,
        lastError: error,
        createdAt: expect.any(String),
        updatedAt: new Date(T0 + 6000).toISOString(),
      },
      {
        id: expect.stringMatching(/^msg_/),
        runId: waiting.run.id,
        origin: 'https://ci.example.com:8443',
        status: 'pending',
        attempts: 0,
        lastError: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    ]);
    // Only the origin: a path or query may carry the caller's own secret.
    expect(JSON.stringify(all)).not.toMatch(/s3cret|token=abc|builds/);
    const list = async (status?: 'pending' | 'delivered' | 'failed', limit = 10) =>
      (await store.admin.listCallbacks({ status, limit })).map((c) => c.runId);
    expect(await list('failed')).toEqual([failing.id]);
    expect(await list('pending')).toEqual([waiting.run.id]);
    expect(await list('delivered')).toEqual([fine.id]);
    expect(await list(undefined, 1)).toEqual([fine.id]);
  });

  it('hands out due callbacks earliest first, up to the limit', async () => {
    const runs = [agent().run, agent().run, agent().run];
    for (const run of runs) await finished(store, run);
    const first = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 2);
    expect(first).toHaveLength(2);
    const rest = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 2);
    expect(rest).toHaveLength(1);
    expect(new Set([...first, ...rest].map((item) => item.runId))).toEqual(
      new Set(runs.map((run) => run.id)),
    );
  });

  if (driver.name === 'sqlite') {
    it('(one process per file) a lease left by an earlier owner is taken over at once after a restart', async () => {
      const { run } = agent();
      await finished(store, run);
      expect(await store.callbacks.claimCallbacks('before-restart', T0 + 5000, LEASE, 10)).toHaveLength(1);
      expect(await store.callbacks.claimCallbacks('after-restart', T0 + 5001, LEASE, 10)).toHaveLength(1);
    });
  }

  if (driver.replicas) {
    it('two replicas claiming at once: each due callback goes to exactly one', async () => {
      const other = driver.open();
      const runs = Array.from({ length: 6 }, () => agent().run);
      for (const run of runs) await finished(store, run);
      const [a, b] = await Promise.all([
        store.callbacks.claimCallbacks('replica-a', T0 + 5000, LEASE, 10),
        other.callbacks.claimCallbacks('replica-b', T0 + 5000, LEASE, 10),
      ]);
      const ids = [...(a ?? []), ...(b ?? [])].map((item) => item.runId).sort();
      expect(ids).toEqual(runs.map((run) => run.id).sort());
    });

    it('a replica that died mid-attempt: its lease expires and another replica sends the attempt', async () => {
      const other = driver.open();
      const { run } = agent();
      await finished(store, run);
      const [held] = await store.callbacks.claimCallbacks('dead', T0 + 5000, LEASE, 10);
      expect(held).toBeDefined();
      expect(await other.callbacks.claimCallbacks('alive', T0 + 5000 + LEASE - 1, LEASE, 10)).toEqual([]);
      const [taken] = await other.callbacks.claimCallbacks('alive', T0 + 5001 + LEASE, LEASE, 10);
      expect(taken).toMatchObject({ runId: run.id, attempts: 0 });
      if (!held || !taken) return;
      // The dead owner's late result is fenced off.
      expect(
        await store.callbacks.finishCallback(held, 'dead', {
          attempts: 1,
          body: '{}',
          error: null,
          now: T0,
          status: 'delivered',
        }),
      ).toBe(false);
      expect(
        await other.callbacks.finishCallback(taken, 'alive', {
          attempts: 1,
          body: '{}',
          error: null,
          now: T0,
          status: 'delivered',
        }),
      ).toBe(true);
    });
  }
});
