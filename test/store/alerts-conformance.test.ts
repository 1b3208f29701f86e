/**
 * Store conformance for alerts (docs/alerts.md), the same tests for every driver (drivers.ts):
 * an alert is enqueued with the failure it reports — a run's completion, a reply's failed
 * delivery, a callback's failed end — only when that write is recorded; an alert message ends
 * alone (no record, no route, no alert of its own); past `maxPerHour` in a rolling hour alerts
 * are suppressed, and once the oldest is an hour old one summary sums them up, once. PostgreSQL
 * also runs the replica tests: the cap holds across two stores failing at the same moment, and
 * two replicas summing up at once make one summary.
 */
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { COUNTED_ALERTS } from '../../src/store/rules/alerts.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import type {
  Action,
  AlertCounts,
  NewAlert,
  NewRun,
  OutboxItem,
  RunCompletion,
  Store,
} from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const HOUR = 3600_000;
const LEASE = 60_000;
let counter = 0;
const nextId = (prefix: string) => `${prefix}_al${String(++counter).padStart(6, '0')}`;

function agent(overrides: Partial<NewRun> = {}): Action & { kind: 'agent' } {
  return {
    kind: 'agent',
    run: {
      id: nextId('run'),
      agentId: 'main',
      sessionKey: nextId('hook:al'),
      mainSessionKey: MAIN,
      name: null,
      message: 'm',
      model: null,
      thinking: null,
      timeoutSeconds: 600,
      wakeMode: 'next-heartbeat',
      deliver: false,
      channel: 'last',
      to: null,
      allowUnsafeExternalContent: false,
      source: 'hook:agent',
      createdAt: T0,
      callbackUrl: null,
      ...overrides,
    },
  };
}

const render = () => ({ status: 202, body: '{}' });

function alertOf(refId: string, over: Partial<NewAlert> = {}): NewAlert {
  return {
    event: 'run.failed',
    refId,
    channel: 'telegram',
    to: '4242',
    text: `run ${refId} failed: boom`,
    maxPerHour: 20,
    ...over,
  };
}

function completion(run: NewRun, over: Partial<RunCompletion> = {}): RunCompletion {
  return {
    runId: run.id,
    owner: 'worker',
    sessionKey: run.sessionKey,
    status: 'failed',
    reply: null,
    error: 'boom',
    finishedAt: T0 + 5000,
    transcript: [],
    summary: {
      id: nextId('evt'),
      sessionKey: MAIN,
      text: 'Hook: run failed: boom',
      source: `run:${run.id}`,
      wakeMode: 'next-heartbeat',
      ts: T0 + 5000,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
    ...over,
  };
}

/** Accepts and claims a run, then completes it with `over` (failed, by default, with no alert). */
async function complete(store: Store, run: NewRun, over: Partial<RunCompletion> = {}) {
  await store.accept([{ kind: 'agent', run }], render);
  const claimed = await store.runs.claimRuns('worker', T0 + 1000, LEASE, 100);
  expect(claimed.map((c) => c.id)).toContain(run.id);
  return store.runs.completeAndClaim(completion(run, over), { now: T0 + 1000, leaseMs: LEASE, limit: 0 });
}

/** A failed run whose completion carries its alert, finished at `at`. */
async function failedRun(store: Store, at: number, over: Partial<NewAlert> = {}) {
  const { run } = agent();
  const outcome = await complete(store, run, { finishedAt: at, alert: alertOf(run.id, over) });
  expect(outcome.recorded).toBe(true);
  return { run, outcome: outcome.alert };
}

const alertHeads = async (store: Store): Promise<OutboxItem[]> =>
  (await store.outbox.deliveryHeads(100)).filter((item) => item.kind === 'alert');

const summaryOf = (counts: AlertCounts, total: number) => ({
  channel: 'telegram',
  to: '4242',
  text: `${total} more: ${counts['run.failed']} run.failed, ${counts['delivery.failed']} delivery.failed, ${counts['callback.failed']} callback.failed`,
});

describe.each(DRIVERS)('Store conformance, alerts: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  it("a failed run's alert is committed with its completion: one pending outbox item of kind alert", async () => {
    const { run, outcome } = await failedRun(store, T0 + 5000);
    expect(outcome).toBe('queued');
    const heads = await alertHeads(store);
    expect(heads).toEqual([
      {
        id: expect.stringMatching(/^dlv_/),
        kind: 'alert',
        refId: run.id,
        mainSessionKey: 'alerts',
        channel: 'telegram',
        to: '4242',
        text: `run ${run.id} failed: boom`,
        resolved: null,
        partsSent: 0,
        attempts: 0,
        nextAttemptAt: T0 + 5000,
        traceParent: null,
      } satisfies OutboxItem,
    ]);
    expect((await store.getRun(run.id))?.status).toBe('failed');
    // Not a reply: the operators' delivery list leaves it out.
    expect(await store.admin.listDeliveries({ limit: 50 })).toEqual([]);
    expect((await store.counts()).deliveriesPending).toBe(1);
  });

  it('a completion whose lease was lost writes no alert; one without an alert answers none', async () => {
    const { run } = agent();
    await store.accept([{ kind: 'agent', run }], render);
    await store.runs.claimRuns('worker', T0 + 1000, LEASE, 100);
    const lost = await store.runs.completeAndClaim(
      { ...completion(run), owner: 'someone-else', alert: alertOf(run.id) },
      { now: T0, leaseMs: LEASE, limit: 0 },
    );
    expect(lost).toEqual({ recorded: false, next: [] });
    const plain = await store.runs.completeAndClaim(completion(run), { now: T0, leaseMs: LEASE, limit: 0 });
    expect(plain).toEqual({ recorded: true, next: [] });
    expect(await alertHeads(store)).toEqual([]);
  });

  it("a reply's failed delivery enqueues its alert; the alert message ends alone: no record, no route, no alert", async () => {
    const { run } = agent({ deliver: true, channel: 'telegram', to: '42' });
    await complete(store, run, {
      status: 'succeeded',
      reply: 'hi',
      error: null,
      delivery: { status: 'pending', channel: 'telegram', to: '42', reason: null },
    });
    const [reply] = await store.outbox.deliveryHeads(10);
    expect(reply?.kind).toBe('run');
    if (!reply) return;
    const failed = { status: 'failed', channel: 'telegram', to: '42', reason: 'chat not found' } as const;
    const alert = alertOf(run.id, { event: 'delivery.failed', text: 'reply not delivered' });
    expect(await store.outbox.finishDelivery(reply, failed, T0 + 6000, alert)).toBe('queued');
    expect((await store.getRun(run.id))?.delivery).toEqual({
      status: 'failed',
      channel: 'telegram',
      to: '42',
      reason: 'chat not found',
    });
    const [message] = await alertHeads(store);
    expect(message).toMatchObject({ kind: 'alert', refId: run.id, text: 'reply not delivered' });
    if (!message) return;
    // The alert message fails too: nothing else is enqueued, the run's record is untouched.
    const again = alertOf(run.id, { event: 'delivery.failed', text: 'an alert about an alert' });
    await store.outbox.retryDelivery(message, 1, T0 + 7000, 'flaky', T0 + 6500);
    expect(
      await store.outbox.finishDelivery(
        { ...message, attempts: 1 },
        { status: 'failed', channel: 'telegram', to: '4242', reason: 'bot blocked' },
        T0 + 7000,
        again,
      ),
    ).toBeUndefined();
    expect(await store.outbox.deliveryHeads(10)).toEqual([]);
    expect((await store.getRun(run.id))?.delivery.reason).toBe('chat not found');
    // A delivered alert sets no session's last route.
    const { outcome } = await failedRun(store, T0 + 8000);
    expect(outcome).toBe('queued');
    const [next] = await alertHeads(store);
    if (!next) throw new Error('no alert');
    await store.outbox.finishDelivery(
      next,
      { status: 'delivered', channel: 'telegram', to: '4242', reason: null },
      T0 + 9000,
    );
    expect(await store.sessions.getRoute('alerts')).toBeUndefined();
    expect(await store.sessions.getRoute(MAIN)).toBeUndefined();
    // Replies only in the operators' list: the failed reply, not the two alert messages.
    expect((await store.admin.listDeliveries({ limit: 50 })).map((d) => d.runId)).toEqual([run.id]);
    expect(await store.admin.listDeliveries({ status: 'failed', limit: 50 })).toHaveLength(1);
  });

  it("a delivered reply enqueues no alert even when one is passed; a callback's failed end enqueues one, only when recorded", async () => {
    const { run } = agent({ callbackUrl: 'https://ci.example.com/done' });
    await complete(store, run, { status: 'succeeded', reply: 'ok', error: null });
    const [item] = await store.callbacks.claimCallbacks('cb', T0 + 5000, LEASE, 10);
    if (!item) throw new Error('no callback');
    const alert = alertOf(run.id, { event: 'callback.failed', text: 'callback failed' });
    const attempt = { attempts: 1, body: '{}', error: 'HTTP 404', now: T0 + 6000, status: 'failed' as const };
    expect(await store.callbacks.finishCallback(item, 'someone-else', { ...attempt, alert })).toBe(false);
    expect(await alertHeads(store)).toEqual([]);
    expect(await store.callbacks.finishCallback(item, 'cb', { ...attempt, alert })).toBe('queued');
    expect((await store.getRun(run.id))?.callback).toEqual({ status: 'failed', attempts: 1 });
    expect((await alertHeads(store)).map((a) => a.text)).toEqual(['callback failed']);
  });

  it('caps alert messages per rolling hour: the rest are suppressed; one summary sums them up once the oldest is an hour old', async () => {
    const cap = { maxPerHour: 2 };
    const outcomes: (string | undefined)[] = [];
    for (let i = 0; i < 5; i++) outcomes.push((await failedRun(store, T0 + i * 1000, cap)).outcome);
    expect(outcomes).toEqual(['queued', 'queued', 'suppressed', 'suppressed', 'suppressed']);
    // A failed delivery and a failed callback count toward the same cap.
    const { run } = agent({ callbackUrl: 'https://ci.example.com/done' });
    await complete(store, run, { status: 'succeeded', reply: 'ok', error: null, finishedAt: T0 + 10_000 });
    const [callback] = await store.callbacks.claimCallbacks('cb', T0 + 10_000, LEASE, 10);
    if (!callback) throw new Error('no callback');
    expect(
      await store.callbacks.finishCallback(callback, 'cb', {
        attempts: 1,
        body: '{}',
        error: 'HTTP 500',
        now: T0 + 11_000,
        status: 'failed',
        alert: alertOf(run.id, { event: 'callback.failed', ...cap }),
      }),
    ).toBe('suppressed');
    expect(await alertHeads(store)).toHaveLength(2);

    // Not before the oldest suppressed alert (T0 + 2000) is an hour old.
    expect(await store.outbox.summarizeAlerts(T0 + 2000 + HOUR - 1, summaryOf)).toBeUndefined();
    // Rolling: the first alert (T0) has left the hour, so one more is sent on its own.
    expect((await failedRun(store, T0 + HOUR + 500, cap)).outcome).toBe('queued');
    expect((await failedRun(store, T0 + HOUR + 600, cap)).outcome).toBe('suppressed');

    const counts = await store.outbox.summarizeAlerts(T0 + 2000 + HOUR, summaryOf);
    expect(counts).toEqual({
      'run.failed': 4,
      'delivery.failed': 0,
      'callback.failed': 1,
      'approval.requested': 0,
      'budget.exceeded': 0,
    });
    expect(await store.outbox.summarizeAlerts(T0 + 2000 + HOUR + 1, summaryOf)).toBeUndefined();
    const texts = (await alertHeads(store)).map((a) => a.text);
    expect(texts).toHaveLength(4);
    expect(texts).toContain('5 more: 4 run.failed, 0 delivery.failed, 1 callback.failed');
    // The summary itself does not count toward the cap: the hour still holds 2 (T0 + 1000, T0 + HOUR + 500).
    expect((await failedRun(store, T0 + HOUR + 900, cap)).outcome).toBe('suppressed');
    expect((await failedRun(store, T0 + 2 * HOUR + 1000, cap)).outcome).toBe('queued');
  });

  it('nothing suppressed: no summary', async () => {
    await failedRun(store, T0);
    expect(await store.outbox.summarizeAlerts(T0 + 10 * HOUR, summaryOf)).toBeUndefined();
    expect(await alertHeads(store)).toHaveLength(1);
  });

  if (driver.replicas) {
    it('two replicas failing at the same moment: the cap holds across them', async () => {
      const other = driver.open();
      const runs = Array.from({ length: 10 }, () => agent().run);
      await store.accept(
        runs.map((run) => ({ kind: 'agent', run })),
        render,
      );
      expect(await store.runs.claimRuns('worker', T0 + 1000, LEASE, 100)).toHaveLength(10);
      const outcomes = await Promise.all(
        runs.map((run, index) =>
          (index % 2 === 0 ? store : other).runs.completeRun({
            ...completion(run),
            alert: alertOf(run.id, { maxPerHour: 3 }),
          }),
        ),
      );
      expect(outcomes.every(Boolean)).toBe(true);
      expect(await alertHeads(store)).toHaveLength(3);
      const [a, b] = await Promise.all([
        store.outbox.summarizeAlerts(T0 + 5000 + HOUR, summaryOf),
        other.outbox.summarizeAlerts(T0 + 5000 + HOUR, summaryOf),
      ]);
      // One replica made the summary, of the other seven; the other found none left.
      expect([a, b].filter(Boolean)).toEqual([
        {
          'run.failed': 7,
          'delivery.failed': 0,
          'callback.failed': 0,
          'approval.requested': 0,
          'budget.exceeded': 0,
        },
      ]);
      expect(await alertHeads(store)).toHaveLength(4);
    });

    it("two replicas' concurrent failed deliveries and callbacks: exactly maxPerHour messages", async () => {
      const other = driver.open();
      const runs = Array.from(
        { length: 8 },
        () => agent({ deliver: true, channel: 'telegram', to: '42' }).run,
      );
      await store.accept(
        runs.map((run) => ({ kind: 'agent', run })),
        render,
      );
      await store.runs.claimRuns('worker', T0 + 1000, LEASE, 100);
      for (const run of runs) {
        await store.runs.completeRun({
          ...completion(run),
          status: 'succeeded',
          reply: 'hi',
          error: null,
          delivery: { status: 'pending', channel: 'telegram', to: '42', reason: null },
        });
      }
      const replies = await store.outbox.deliveryHeads(100);
      expect(replies).toHaveLength(8);
      const results = await Promise.all(
        replies.map((reply, index) =>
          (index % 2 === 0 ? store : other).outbox.finishDelivery(
            reply,
            { status: 'failed', channel: 'telegram', to: '42', reason: 'nope' },
            T0 + 6000,
            alertOf(reply.refId, { event: 'delivery.failed', maxPerHour: 2 }),
          ),
        ),
      );
      expect(results.filter((r) => r === 'queued')).toHaveLength(2);
      expect(results.filter((r) => r === 'suppressed')).toHaveLength(6);
    });
  }
});

describe('alerts on SQLite: query plans', () => {
  it("the cap's count reads deliveries_alerts, the summary deliveries_suppressed: never the whole outbox", () => {
    const db = new Database(':memory:');
    for (const step of MIGRATIONS) db.exec(step);
    const plan = (sql: string, ...params: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[])
        .map((row) => row.detail)
        .join('\n');
    expect(plan(`SELECT COUNT(*) FROM deliveries WHERE ${COUNTED_ALERTS} AND created_at > ?`, 0)).toMatch(
      /USING INDEX deliveries_alerts/,
    );
    expect(plan(`SELECT MIN(created_at) FROM deliveries WHERE status = 'suppressed'`)).toMatch(
      /deliveries_suppressed/,
    );
    db.close();
  });
});
