/**
 * Store conformance for budgets (docs/budgets.md), the same tests for every driver (drivers.ts):
 * a recorded completion adds its usage to the counters it names, in its transaction (a lost
 * lease adds nothing; a batch's completions sharing a counter are summed); a heartbeat adds its
 * own, failed or not; the spend survives the store being closed and opened again; a budget's
 * alert is enqueued once per window, however many replicas ask; retention drops only windows
 * that are over. On PostgreSQL, two replicas completing at once lose no addition.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { windowStart } from '../../src/store/rules/budgets.js';
import type {
  NewAlert,
  NewRun,
  RunCompletion,
  RunUsage,
  SpendCounter,
  Store,
} from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';
import { newRunFactory } from './new-runs.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const HOUR = windowStart('hour', T0);
const DAY = windowStart('day', T0);
const LEASE = 60_000;
const { nextId, newRun } = newRunFactory('bg', T0);
const agent = (): NewRun => newRun({ source: 'hook:github', hookId: 'github' });

const usage = (costUsd: number | null, inputTokens = 1000, outputTokens = 100): RunUsage => ({
  model: 'claude/claude-sonnet-4-5',
  inputTokens,
  outputTokens,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd,
});

const counters: SpendCounter[] = [
  { scope: 'all', window: 'day', start: DAY },
  { scope: 'hook:github', window: 'day', start: DAY },
  { scope: 'hook:github', window: 'hour', start: HOUR },
];

function completion(run: NewRun, used: RunUsage | undefined, owner = 'worker'): RunCompletion {
  const finishedAt = T0 + 5000;
  return {
    runId: run.id,
    owner,
    sessionKey: run.sessionKey,
    status: 'succeeded',
    reply: 'done',
    error: null,
    finishedAt,
    transcript: [],
    summary: {
      id: nextId('evt'),
      sessionKey: MAIN,
      text: 'Hook: done',
      source: `run:${run.id}`,
      wakeMode: 'next-heartbeat',
      ts: finishedAt,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
    spend: counters,
    ...(used ? { usage: used } : {}),
  };
}

const alert = (text: string): NewAlert => ({
  event: 'budget.exceeded',
  refId: 'github-daily',
  channel: 'telegram',
  to: '123',
  text,
  maxPerHour: 20,
});

describe.each(DRIVERS)('Store conformance, budgets: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  const acceptAndClaim = async (on: Store, runs: NewRun[], owner = 'worker') => {
    for (const run of runs) {
      const result = await on.accept([{ kind: 'agent', run }], () => ({ status: 202, body: '{}' }));
      expect(result.kind).toBe('committed');
    }
    const claimed = await on.runs.claimRuns(owner, T0 + 1000, LEASE, runs.length);
    expect(claimed.map((r) => r.id).sort()).toEqual(runs.map((r) => r.id).sort());
    return claimed;
  };

  it('a claimed run carries the hook and the token it was accepted by', async () => {
    const run = { ...agent(), tokenId: 'ci' };
    const [claimed] = await acceptAndClaim(store, [run]);
    expect(claimed).toMatchObject({ hookId: 'github', tokenId: 'ci' });
  });

  it('a recorded completion adds its cost and input + output tokens to each counter it names', async () => {
    expect(await store.budgets.readSpend(counters)).toEqual(counters.map(() => ({ usd: 0, tokens: 0 })));
    const [a, b, c] = [agent(), agent(), agent()];
    await acceptAndClaim(store, [a, b, c]);
    // Two in one group commit (same turn), one unpriced: its tokens count, its cost does not.
    const recorded = await Promise.all([
      store.runs.completeRun(completion(a, usage(0.25))),
      store.runs.completeRun(completion(b, usage(0.5, 2000, 200))),
    ]);
    expect(recorded).toEqual([true, true]);
    expect(await store.runs.completeRun(completion(c, usage(null, 10, 1)))).toBe(true);
    const [all, dayOfHook, hourOfHook] = await store.budgets.readSpend(counters);
    expect(all?.usd).toBeCloseTo(0.75, 10);
    expect(all?.tokens).toBe(1100 + 2200 + 11);
    expect(dayOfHook).toEqual(all);
    expect(hourOfHook).toEqual(all);
    // Another window, another scope: nothing.
    expect(
      await store.budgets.readSpend([
        { scope: 'all', window: 'day', start: DAY + 86_400_000 },
        { scope: 'token:ci', window: 'day', start: DAY },
      ]),
    ).toEqual([
      { usd: 0, tokens: 0 },
      { usd: 0, tokens: 0 },
    ]);
  });

  it('a completion whose lease was lost adds nothing; one without spend counters adds nothing', async () => {
    const [lost, plain] = [agent(), agent()];
    await acceptAndClaim(store, [lost, plain]);
    expect(await store.runs.completeRun(completion(lost, usage(1), 'someone-else'))).toBe(false);
    const { spend: _, ...withoutSpend } = completion(plain, usage(1));
    expect(await store.runs.completeRun(withoutSpend)).toBe(true);
    expect((await store.budgets.readSpend(counters))[0]).toEqual({ usd: 0, tokens: 0 });
  });

  it('a heartbeat adds its usage to its counters, failed or not', async () => {
    const base = {
      sessionKey: MAIN,
      startedAt: T0,
      finishedAt: T0 + 10,
      eventIds: [],
      transcript: [],
      delivery: { status: 'skipped' as const, channel: null, to: null, reason: 'ack' },
      spend: [{ scope: 'hook:wake', window: 'day' as const, start: DAY }],
    };
    await store.sessions.recordHeartbeat({
      ...base,
      id: 'hb_1',
      status: 'succeeded',
      reply: 'HEARTBEAT_OK',
      error: null,
      usage: usage(0.1),
    });
    await store.sessions.recordHeartbeat({
      ...base,
      id: 'hb_2',
      status: 'failed',
      reply: null,
      error: 'x',
      usage: usage(0.2),
    });
    const [wake] = await store.budgets.readSpend(base.spend);
    expect(wake?.usd).toBeCloseTo(0.3, 10);
    expect(wake?.tokens).toBe(2200);
  });

  it('the spend is the same after the store is closed and opened again (a restart)', async () => {
    const run = agent();
    await acceptAndClaim(store, [run]);
    expect(await store.runs.completeRun(completion(run, usage(1.5)))).toBe(true);
    await store.close();
    const reopened = driver.open();
    expect((await reopened.budgets.readSpend(counters))[1]).toEqual({ usd: 1.5, tokens: 1100 });
  });

  it("a budget's alert is enqueued once per window; the next window's is new", async () => {
    expect(await store.budgets.alertOnce('github-daily', 'day', DAY, alert('first'), T0)).toBe('queued');
    expect(await store.budgets.alertOnce('github-daily', 'day', DAY, alert('again'), T0 + 1)).toBeUndefined();
    expect(await store.budgets.alertOnce('other', 'day', DAY, alert('other'), T0 + 2)).toBe('queued');
    const next = DAY + 86_400_000;
    expect(await store.budgets.alertOnce('github-daily', 'day', next, alert('next day'), next)).toBe(
      'queued',
    );
    expect((await store.counts()).deliveriesPending).toBe(3);
    const [head] = await store.outbox.deliveryHeads(10);
    expect(head).toMatchObject({ kind: 'alert', text: 'first' });
  });

  it('retention drops the counters and alert claims of windows that are over, never an open one', async () => {
    const run = agent();
    await acceptAndClaim(store, [run]);
    expect(await store.runs.completeRun(completion(run, usage(1)))).toBe(true);
    await store.budgets.alertOnce('github-daily', 'day', DAY, alert('first'), T0);
    // A horizon inside the day: the day's counters stay, the hour's (over by then) go.
    await store.pruneBatch('runs', HOUR + 3_600_000 + 1, 100);
    const [all, , hour] = await store.budgets.readSpend(counters);
    expect(all).toEqual({ usd: 1, tokens: 1100 });
    expect(hour).toEqual({ usd: 0, tokens: 0 });
    expect(await store.budgets.alertOnce('github-daily', 'day', DAY, alert('again'), T0)).toBeUndefined();
    // Past the day's end: everything of that day goes, and its alert could be raised again.
    await store.pruneBatch('runs', DAY + 86_400_000 + 1, 100);
    expect((await store.budgets.readSpend(counters))[0]).toEqual({ usd: 0, tokens: 0 });
    expect(await store.budgets.alertOnce('github-daily', 'day', DAY, alert('again'), T0)).toBe('queued');
  });

  it.runIf(driver.replicas)(
    'two replicas completing at once add every run, and alert once between them',
    async () => {
      const other = driver.open();
      const mine = Array.from({ length: 20 }, agent);
      const theirs = Array.from({ length: 20 }, agent);
      await acceptAndClaim(store, mine, 'w1');
      await acceptAndClaim(other, theirs, 'w2');
      const results = await Promise.all([
        ...mine.map((run) => store.runs.completeRun(completion(run, usage(0.01, 100, 10), 'w1'))),
        ...theirs.map((run) => other.runs.completeRun(completion(run, usage(0.01, 100, 10), 'w2'))),
      ]);
      expect(results.every(Boolean)).toBe(true);
      for (const on of [store, other]) {
        const [all] = await on.budgets.readSpend(counters);
        expect(all?.tokens).toBe(40 * 110);
        expect(all?.usd).toBeCloseTo(0.4, 10);
      }
      const outcomes = await Promise.all(
        [store, other, store, other].map((on, i) =>
          on.budgets.alertOnce('github-daily', 'day', DAY, alert(`try ${i}`), T0),
        ),
      );
      expect(outcomes.filter((o) => o === 'queued')).toHaveLength(1);
      expect(outcomes.filter((o) => o === undefined)).toHaveLength(3);
    },
  );
});
