/**
 * Store conformance for retention (docs/operating.md "Retention"), the same
 * tests for every driver (drivers.ts): what `pruneBatch` deletes — finished
 * runs with their outbox rows, callbacks and inputs; old transcript entries;
 * consumed events; finished heartbeats with their outbox rows — what it keeps
 * however old (queued and running runs, pending events, anything still to be
 * delivered or called back, routes, idempotency records, the queue's heads),
 * and that it works in batches whose counts add up. PostgreSQL also shows that
 * a replica finding another one pruning deletes nothing.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PgStore } from '../../src/store/postgres/pg-store.js';
import { RETENTION_LOCK_KEY } from '../../src/store/postgres/retention.js';
import type {
  Action,
  DeliveryRecord,
  HeartbeatRecord,
  NewRun,
  RunCompletion,
  Store,
} from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const FINISHED = T0 + 5000;
/** A horizon after every run of these tests finished: all of them are old enough. */
const LATER = T0 + 3_600_000;
const LEASE = 60_000;
let counter = 0;
const nextId = (prefix: string) => `${prefix}_rt${String(++counter).padStart(6, '0')}`;

function agent(overrides: Partial<NewRun> = {}): NewRun {
  return {
    id: nextId('run'),
    agentId: 'main',
    sessionKey: nextId('hook:rt'),
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
    ...overrides,
  };
}

const render = () => ({ status: 202, body: '{}' });
const wake = (text: string, sessionKey = MAIN): Action => ({
  kind: 'wake',
  event: { id: nextId('evt'), sessionKey, text, source: 'hook:wake', wakeMode: 'now', ts: T0 },
});
const PENDING_DELIVERY: DeliveryRecord = { status: 'pending', channel: 'telegram', to: '42', reason: null };
const DELIVERED: DeliveryRecord = { status: 'delivered', channel: 'telegram', to: '42', reason: null };

function completion(run: NewRun, over: Partial<RunCompletion> = {}): RunCompletion {
  return {
    runId: run.id,
    owner: 'worker',
    sessionKey: run.sessionKey,
    status: 'succeeded',
    reply: 'done',
    error: null,
    finishedAt: FINISHED,
    transcript: [
      { role: 'user', content: 'm' },
      { role: 'assistant', content: 'done' },
    ],
    summary: {
      id: nextId('evt'),
      sessionKey: MAIN,
      text: 'Hook: done',
      source: `run:${run.id}`,
      wakeMode: 'next-heartbeat',
      ts: FINISHED,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
    ...over,
  };
}

function heartbeat(over: Partial<HeartbeatRecord> = {}): HeartbeatRecord {
  return {
    id: nextId('hb'),
    sessionKey: MAIN,
    startedAt: T0,
    finishedAt: T0 + 100,
    status: 'succeeded',
    eventIds: [],
    reply: 'all good',
    error: null,
    transcript: [],
    delivery: { status: 'none', channel: null, to: null, reason: null },
    ...over,
  };
}

describe.each(DRIVERS)('Store conformance, retention: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  /** Accepts the runs, runs each as `worker` and completes it. */
  async function finished(run: NewRun, over: Partial<RunCompletion> = {}): Promise<NewRun> {
    await store.accept([{ kind: 'agent', run }], render);
    const claimed = await store.runs.claimRuns('worker', T0 + 1000, LEASE, 100);
    expect(claimed.map((c) => c.id)).toContain(run.id);
    expect(await store.runs.completeRun(completion(run, over))).toBe(true);
    return run;
  }

  /** Settles the pending delivery of the first outbox head as `record`. */
  async function settleDelivery(record: DeliveryRecord, at = FINISHED + 10): Promise<void> {
    const [head] = await store.outbox.deliveryHeads(10);
    if (!head) throw new Error('no delivery head');
    await store.outbox.finishDelivery({ ...head, resolved: { channel: 'telegram', to: '42' } }, record, at);
  }

  /** Batches until nothing more; every batch but the last is full. */
  async function pruneAll(kind: 'runs' | 'events', olderThan: number, limit = 100): Promise<number> {
    let total = 0;
    for (let i = 0; i < 100; i++) {
      const batch = await store.pruneBatch(kind, olderThan, limit);
      total += batch.deleted;
      if (!batch.more) return total;
    }
    throw new Error('pruning never ended');
  }

  describe('runs', () => {
    it('deletes finished runs older than the horizon with their deliveries and callback; they are gone from every read', async () => {
      const ok = await finished(agent());
      const failed = await finished(agent(), {
        status: 'failed',
        reply: null,
        error: 'boom',
        transcript: [],
      });
      const timedOut = await finished(agent(), {
        status: 'timed_out',
        reply: null,
        error: 't',
        transcript: [],
      });
      const delivered = await finished(agent({ deliver: true, channel: 'telegram', to: '42' }), {
        delivery: PENDING_DELIVERY,
      });
      await settleDelivery(DELIVERED);
      const called = await finished(agent({ callbackUrl: 'https://ci.example.com/done' }));
      const [callback] = await store.callbacks.claimCallbacks('cb', FINISHED, LEASE, 10);
      if (!callback) throw new Error('no callback due');
      await store.callbacks.finishCallback(callback, 'cb', {
        attempts: 1,
        body: '{}',
        error: null,
        now: FINISHED,
        status: 'delivered',
      });
      const all = [ok, failed, timedOut, delivered, called];

      expect(await store.pruneBatch('runs', LATER, 100)).toEqual({ deleted: 5, more: false });
      for (const run of all) {
        expect(await store.getRun(run.id)).toBeUndefined();
        expect(await store.admin.getStoredRun(run.id)).toBeUndefined();
      }
      expect((await store.admin.listRuns({ limit: 50 }))?.runs).toEqual([]);
      expect(await store.admin.listDeliveries({ limit: 50 })).toEqual([]);
      expect(await store.admin.redeliverRun(delivered.id, LATER)).toBe('not_found');
      expect(await store.pruneBatch('runs', LATER, 100)).toEqual({ deleted: 0, more: false });
    });

    it('keeps runs finished at or after the horizon', async () => {
      const run = await finished(agent());
      expect(await store.pruneBatch('runs', FINISHED, 100)).toEqual({ deleted: 0, more: false });
      expect((await store.getRun(run.id))?.status).toBe('succeeded');
      expect(await store.pruneBatch('runs', FINISHED + 1, 100)).toEqual({ deleted: 1, more: false });
    });

    it('never deletes queued or running runs, nor what is still to be delivered or called back, however old', async () => {
      const toDeliver = await finished(agent({ deliver: true, channel: 'telegram', to: '42' }), {
        delivery: PENDING_DELIVERY,
      });
      // With a delivery pending, its callback waits for it ("waiting" in the outbox).
      const callbackWaiting = await finished(
        agent({ deliver: true, channel: 'telegram', to: '43', callbackUrl: 'https://ci.example.com/a' }),
        { delivery: { ...PENDING_DELIVERY, to: '43' } },
      );
      const callbackDue = await finished(agent({ callbackUrl: 'https://ci.example.com/b' }));
      const callbackRetrying = await finished(agent({ callbackUrl: 'https://ci.example.com/c' }));
      const due = await store.callbacks.claimCallbacks('cb', FINISHED, LEASE, 10);
      const retry = due.find((item) => item.runId === callbackRetrying.id);
      if (!retry) throw new Error('callback not due');
      await store.callbacks.retryCallback(retry, 'cb', {
        attempts: 1,
        body: '{}',
        error: '503',
        now: FINISHED,
        nextAttemptAt: LATER * 2,
      });
      // Delivered once, then an operator asked for it again: pending in the outbox anew.
      const redelivered = await finished(agent({ deliver: true, channel: 'telegram', to: '44' }), {
        delivery: { ...PENDING_DELIVERY, to: '44' },
      });
      const heads = await store.outbox.deliveryHeads(10);
      const head = heads.find((item) => item.refId === redelivered.id);
      if (!head) throw new Error('no delivery head');
      await store.outbox.finishDelivery(
        { ...head, resolved: { channel: 'telegram', to: '44' } },
        { ...DELIVERED, to: '44' },
        FINISHED,
      );
      expect(await store.admin.redeliverRun(redelivered.id, FINISHED + 1)).toBe('enqueued');

      const key = nextId('hook:rt');
      const running = agent({ sessionKey: key });
      const queuedBehind = agent({ sessionKey: key });
      const queued = agent();
      await store.accept(
        [running, queuedBehind, queued].map((run) => ({ kind: 'agent', run })),
        render,
      );
      expect((await store.runs.claimRuns('worker', T0, LEASE, 1)).map((c) => c.id)).toEqual([running.id]);
      const kept = [
        running,
        queuedBehind,
        queued,
        toDeliver,
        callbackWaiting,
        callbackDue,
        callbackRetrying,
        redelivered,
      ];
      expect(await pruneAll('runs', Number.MAX_SAFE_INTEGER)).toBe(0);
      for (const run of kept) expect(await store.getRun(run.id), run.id).toBeDefined();
      expect((await store.admin.listRuns({ limit: 50 }))?.runs).toHaveLength(kept.length);
      expect((await store.getRun(callbackRetrying.id))?.callback).toEqual({ status: 'pending', attempts: 1 });
      expect((await store.outbox.deliveryHeads(10)).map((item) => item.refId).sort()).toEqual(
        [toDeliver.id, callbackWaiting.id, redelivered.id].sort(),
      );
      expect(await store.counts()).toEqual({ runsQueued: 2, runsRunning: 1, deliveriesPending: 3 });
    });

    it('leaves the run queue intact: a key whose old runs went still runs its next ones in order', async () => {
      const key = nextId('hook:rt');
      const first = await finished(agent({ sessionKey: key }));
      const second = agent({ sessionKey: key });
      const third = agent({ sessionKey: key });
      await store.accept(
        [
          { kind: 'agent', run: second },
          { kind: 'agent', run: third },
        ],
        render,
      );
      expect(await store.pruneBatch('runs', LATER, 100)).toEqual({ deleted: 1, more: false });
      expect(await store.getRun(first.id)).toBeUndefined();

      expect((await store.runs.claimRuns('worker', LATER, LEASE, 10)).map((c) => c.id)).toEqual([second.id]);
      expect(await store.runs.completeRun(completion(second))).toBe(true);
      await store.pruneBatch('runs', LATER, 100);
      expect((await store.runs.claimRuns('worker', LATER, LEASE, 10)).map((c) => c.id)).toEqual([third.id]);
      const fourth = agent({ sessionKey: key });
      await store.accept([{ kind: 'agent', run: fourth }], render);
      expect(await store.runs.completeRun(completion(third))).toBe(true);
      expect((await store.runs.claimRuns('worker', LATER, LEASE, 10)).map((c) => c.id)).toEqual([fourth.id]);
    });

    it("keeps idempotency records: a repeat of a pruned run's request replays its answer", async () => {
      const run = agent();
      const claim = { scope: '/hooks/agent', key: 'k-1', bodyHash: 'h', now: T0, ttlMs: 86_400_000 };
      const answer = { status: 202, body: JSON.stringify({ ok: true, runId: run.id }) };
      await store.accept([{ kind: 'agent', run }], () => answer, claim);
      await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
      await store.runs.completeRun(completion(run));
      expect(await store.pruneBatch('runs', LATER, 100)).toEqual({ deleted: 1, more: false });
      const repeat = await store.accept([{ kind: 'agent', run: agent() }], render, {
        ...claim,
        now: T0 + 2000,
      });
      expect(repeat).toEqual({ kind: 'replay', answer });
    });

    it('deletes transcript entries older than the horizon, keeping newer ones', async () => {
      const key = nextId('hook:rt');
      await finished(agent({ sessionKey: key }));
      const later = agent({ sessionKey: key });
      await store.accept([{ kind: 'agent', run: later }], render);
      await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
      await store.runs.completeRun(
        completion(later, {
          finishedAt: LATER + 10,
          transcript: [
            { role: 'user', content: 'again' },
            { role: 'assistant', content: 'still here' },
          ],
        }),
      );
      expect(await store.sessions.loadTranscript(key, 10)).toHaveLength(4);
      expect(await store.pruneBatch('runs', LATER, 100)).toEqual({ deleted: 1, more: false });
      expect(await store.sessions.loadTranscript(key, 10)).toEqual([
        { role: 'user', content: 'again' },
        { role: 'assistant', content: 'still here' },
      ]);
    });

    it('works in batches: each full batch says there may be more, and the counts add up', async () => {
      for (let i = 0; i < 5; i++) await finished(agent(), { transcript: [] });
      expect(await store.pruneBatch('runs', LATER, 2)).toEqual({ deleted: 2, more: true });
      expect(await store.pruneBatch('runs', LATER, 2)).toEqual({ deleted: 2, more: true });
      expect(await store.pruneBatch('runs', LATER, 2)).toEqual({ deleted: 1, more: false });
      expect((await store.admin.listRuns({ limit: 50 }))?.runs).toEqual([]);
      // A batch full of transcript entries alone also asks for another.
      const key = nextId('hook:rt');
      for (let i = 0; i < 2; i++) await finished(agent({ sessionKey: key }));
      expect(await store.pruneBatch('runs', LATER, 3)).toEqual({ deleted: 2, more: true });
      expect(await store.pruneBatch('runs', LATER, 3)).toEqual({ deleted: 0, more: false });
      expect(await store.sessions.loadTranscript(key, 10)).toEqual([]);
    });
  });

  describe('events and heartbeats', () => {
    it('deletes consumed events older than the horizon and never a pending one, however old', async () => {
      await store.accept([wake('old one'), wake('old two'), wake('never seen', 'agent:other:main')], render);
      const seen = await store.sessions.pendingEvents(MAIN, 10);
      expect(await store.consumeEvents(MAIN, [seen[0]?.id as string], T0 + 10)).toBe(1);
      await store.accept([wake('recent')], render);
      const recent = (await store.sessions.pendingEvents(MAIN, 10)).find((e) => e.text === 'recent');
      await store.consumeEvents(MAIN, [recent?.id as string], LATER + 1);

      expect(await store.pruneBatch('events', LATER, 100)).toEqual({ deleted: 1, more: false });
      expect((await store.listEvents(MAIN, { limit: 10 }))?.map((e) => [e.text, e.status])).toEqual([
        ['old two', 'pending'],
        ['recent', 'consumed'],
      ]);
      expect(await pruneAll('events', Number.MAX_SAFE_INTEGER)).toBe(1);
      expect((await store.sessions.pendingEvents(MAIN, 10)).map((e) => e.text)).toEqual(['old two']);
      expect((await store.sessions.pendingEvents('agent:other:main', 10)).map((e) => e.text)).toEqual([
        'never seen',
      ]);
      // Coalescing still sees the newest pending event.
      const again = await store.accept([wake('old two')], render);
      expect(again.kind === 'committed' && again.committed[0]).toMatchObject({ outcome: 'coalesced' });
    });

    it('deletes finished heartbeats with their settled replies; keeps one whose reply is still to go, and the last route', async () => {
      await store.sessions.setRoute(MAIN, { channel: 'telegram', to: '42' }, T0);
      await store.sessions.recordHeartbeat(heartbeat({ status: 'failed', reply: null, error: 'boom' }));
      await store.sessions.recordHeartbeat(
        heartbeat({ delivery: { status: 'pending', channel: 'last', to: null, reason: null } }),
      );
      await settleDelivery(DELIVERED, T0 + 200);
      const waiting = heartbeat({
        reply: 'to send',
        delivery: { status: 'pending', channel: 'last', to: null, reason: null },
      });
      await store.sessions.recordHeartbeat(waiting);
      const fresh = heartbeat({ finishedAt: LATER + 5 });
      await store.sessions.recordHeartbeat(fresh);

      expect(await pruneAll('events', LATER)).toBe(0); // heartbeats are not counted as events
      expect((await store.sessions.listHeartbeats(MAIN, 10)).map((h) => h.id)).toEqual([
        waiting.id,
        fresh.id,
      ]);
      expect((await store.admin.listDeliveries({ limit: 10 })).map((d) => d.heartbeatId)).toEqual([
        waiting.id,
      ]);
      expect(await store.sessions.getRoute(MAIN)).toEqual({ channel: 'telegram', to: '42' });
    });

    it('works in batches and counts events only', async () => {
      await store.accept(
        Array.from({ length: 5 }, (_, i) => wake(`e${i}`)),
        render,
      );
      const events = await store.sessions.pendingEvents(MAIN, 10);
      await store.consumeEvents(
        MAIN,
        events.map((e) => e.id),
        T0,
      );
      expect(await store.pruneBatch('events', LATER, 2)).toEqual({ deleted: 2, more: true });
      expect(await store.pruneBatch('events', LATER, 2)).toEqual({ deleted: 2, more: true });
      expect(await store.pruneBatch('events', LATER, 2)).toEqual({ deleted: 1, more: false });
      expect(await store.listEvents(MAIN, { limit: 10 })).toEqual([]);
    });
  });

  it.runIf(driver.replicas)(
    'one prune at a time across replicas: a replica finding another one pruning deletes nothing',
    async () => {
      await finished(agent());
      const other = store as PgStore;
      const holder = await other.pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT pg_advisory_xact_lock($1)', [RETENTION_LOCK_KEY]);
        const replica = driver.open();
        expect(await replica.pruneBatch('runs', LATER, 100)).toEqual({ deleted: 0, more: false });
        await holder.query('COMMIT');
        expect(await replica.pruneBatch('runs', LATER, 100)).toEqual({ deleted: 1, more: false });
      } finally {
        holder.release();
      }
    },
  );
});
