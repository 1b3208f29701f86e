/**
 * Store conformance for usage and cost (docs/usage.md), the same tests for every driver
 * (drivers.ts): a completion's usage reads back on the RunView and the run list (zeros before
 * it finishes, `costUsd` null without a price); a model step keeps its call's usage; a
 * heartbeat's usage reads back on its view; the RunView's `model` is the completion's (the model
 * that answered), else the accepted one; `usageSummary` sums the runs finished in the window per
 * hook, token, agent and model, the costliest first; with a bucket, split by the UTC hour or day
 * each run finished in, the oldest bucket first.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ModelStep, NewRun, RunCompletion, RunUsage, Store } from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';
import { newRunFactory } from './new-runs.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const LEASE = 60_000;
const { nextId, newRun: agent } = newRunFactory('us', T0);

function completion(run: NewRun, usage: RunUsage | undefined, finishedAt = T0 + 5000): RunCompletion {
  return {
    runId: run.id,
    owner: 'worker',
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
    ...(usage ? { usage } : {}),
  };
}

const usage = (overrides: Partial<RunUsage> = {}): RunUsage => ({
  model: 'claude/claude-sonnet-4-5',
  inputTokens: 2350,
  outputTokens: 120,
  cacheReadTokens: 2000,
  cacheWriteTokens: 300,
  costUsd: 0.003675,
  ...overrides,
});

const ZERO = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null };

describe.each(DRIVERS)('Store conformance, usage: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  const accept = async (run: NewRun) => {
    const result = await store.accept([{ kind: 'agent', run }], () => ({ status: 202, body: '{}' }));
    expect(result.kind).toBe('committed');
  };

  /** Accepts, claims and completes a run with this usage. */
  const finish = async (run: NewRun, used: RunUsage | undefined, finishedAt = T0 + 5000) => {
    await accept(run);
    const claimed = await store.runs.claimRuns('worker', T0 + 1000, LEASE, 100);
    expect(claimed.map((r) => r.id)).toContain(run.id);
    expect(await store.runs.completeRun(completion(run, used, finishedAt))).toBe(true);
  };

  it('a completion writes its usage: the RunView and the run list read it back', async () => {
    const run = agent();
    await accept(run);
    expect((await store.getRun(run.id))?.usage).toEqual(ZERO);
    await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
    expect(await store.runs.completeRun(completion(run, usage()))).toBe(true);
    const { model: _, ...view } = usage();
    expect((await store.getRun(run.id))?.usage).toEqual(view);
    const page = await store.admin.listRuns({ limit: 10 });
    expect(page?.runs[0]?.usage).toEqual(view);
    const summaries = await store.admin.listRunSummaries({ limit: 10 });
    expect(summaries?.runs[0]?.usage).toEqual(view);
  });

  it("the RunView's model is the one that answered, once written with the completion (docs/agent-runs.md, Fallbacks)", async () => {
    const run = agent({ model: 'claude/claude-sonnet-4-5' });
    await accept(run);
    expect((await store.getRun(run.id))?.model).toBe('claude/claude-sonnet-4-5');
    await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
    expect(await store.runs.completeRun(completion(run, usage({ model: 'oai/gpt-5-mini' })))).toBe(true);
    expect((await store.getRun(run.id))?.model).toBe('oai/gpt-5-mini');
    expect((await store.admin.listRuns({ limit: 10 }))?.runs[0]?.model).toBe('oai/gpt-5-mini');
    expect((await store.admin.listRunSummaries({ limit: 10 }))?.runs[0]?.model).toBe('oai/gpt-5-mini');
  });

  it('a completion without usage keeps the model the run was accepted with', async () => {
    const run = agent({ model: 'claude/claude-sonnet-4-5' });
    await finish(run, undefined);
    expect((await store.getRun(run.id))?.model).toBe('claude/claude-sonnet-4-5');
  });

  it('no price: costUsd stays null; no usage at all: zeros', async () => {
    const unpriced = agent();
    const none = agent();
    await finish(unpriced, usage({ costUsd: null }));
    await finish(none, undefined);
    expect((await store.getRun(unpriced.id))?.usage).toMatchObject({ inputTokens: 2350, costUsd: null });
    expect((await store.getRun(none.id))?.usage).toEqual(ZERO);
  });

  it('a model step keeps its call usage; a tool step and a step without usage have none', async () => {
    const run = agent();
    await accept(run);
    await store.runs.claimRuns('worker', T0 + 1000, LEASE, 10);
    const call = { callId: 'c1', tool: 'repo.get', arguments: {} };
    const step = (index: number, extra: Partial<ModelStep>): ModelStep => ({
      kind: 'model',
      index,
      text: '',
      calls: [call],
      status: 'ok',
      startedAt: T0,
      finishedAt: T0 + 1,
      ...extra,
    });
    const used = { inputTokens: 900, outputTokens: 40, cacheReadTokens: 512, cacheWriteTokens: 7 };
    await store.steps.append(run.id, 'worker', step(0, { usage: used }));
    await store.steps.append(run.id, 'worker', {
      kind: 'tool',
      index: 1,
      callId: 'c1',
      tool: 'repo.get',
      arguments: {},
      result: 'ok',
      status: 'ok',
      startedAt: T0,
      finishedAt: T0 + 1,
    });
    await store.steps.append(run.id, 'worker', step(2, { calls: [] }));
    const steps = await store.steps.list(run.id);
    expect((steps[0] as ModelStep).usage).toEqual(used);
    expect(steps[1]).not.toHaveProperty('usage');
    expect(steps[2]).not.toHaveProperty('usage');
  });

  it('a heartbeat records its usage, read back on its view', async () => {
    const base = {
      sessionKey: MAIN,
      startedAt: T0,
      finishedAt: T0 + 10,
      eventIds: [],
      transcript: [],
      delivery: { status: 'skipped' as const, channel: null, to: null, reason: 'ack' },
    };
    await store.sessions.recordHeartbeat({
      ...base,
      id: 'hb_1',
      status: 'succeeded',
      reply: 'HEARTBEAT_OK',
      error: null,
      usage: usage({ model: 'oai/gpt-5-mini', costUsd: null }),
    });
    await store.sessions.recordHeartbeat({ ...base, id: 'hb_2', status: 'failed', reply: null, error: 'x' });
    const [first, second] = await store.sessions.listHeartbeats(MAIN, 10);
    expect(first?.usage).toEqual({
      ...ZERO,
      inputTokens: 2350,
      outputTokens: 120,
      cacheReadTokens: 2000,
      cacheWriteTokens: 300,
    });
    expect(second?.usage).toEqual(ZERO);
  });

  it('sums the runs finished in the window per grouping, the costliest first', async () => {
    const a1 = agent({ source: 'hook:a', tokenId: 'ci', agentId: 'main' });
    const a2 = agent({ source: 'hook:a', tokenId: 'ci', agentId: 'ops' });
    const b = agent({ source: 'hook:b', agentId: 'ops' });
    const late = agent({ source: 'hook:a' });
    const early = agent({ source: 'hook:a' });
    await finish(a1, usage({ costUsd: 1.5 }));
    await finish(
      a2,
      usage({
        model: 'oai/gpt-5-mini',
        inputTokens: 100,
        outputTokens: 10,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd: null,
      }),
    );
    await finish(b, usage({ costUsd: 4 }));
    await finish(late, usage({ costUsd: 100 }), T0 + 20_000);
    await finish(early, usage({ costUsd: 100 }), T0 + 100);
    const window = { since: T0 + 1000, until: T0 + 10_000 };

    expect(await store.admin.usageSummary({ by: 'hook', ...window })).toEqual([
      {
        key: 'hook:b',
        runs: 1,
        inputTokens: 2350,
        outputTokens: 120,
        cacheReadTokens: 2000,
        cacheWriteTokens: 300,
        costUsd: 4,
      },
      {
        key: 'hook:a',
        runs: 2,
        inputTokens: 2450,
        outputTokens: 130,
        cacheReadTokens: 2000,
        cacheWriteTokens: 300,
        costUsd: 1.5,
      },
    ]);
    const byModel = await store.admin.usageSummary({ by: 'model', ...window });
    expect(byModel.map((g) => [g.key, g.runs, g.costUsd])).toEqual([
      ['claude/claude-sonnet-4-5', 2, 5.5],
      ['oai/gpt-5-mini', 1, null],
    ]);
    const byAgent = await store.admin.usageSummary({ by: 'agent', ...window });
    expect(byAgent.map((g) => [g.key, g.runs, g.costUsd])).toEqual([
      ['ops', 2, 4],
      ['main', 1, 1.5],
    ]);
    const byToken = await store.admin.usageSummary({ by: 'tokenId', ...window });
    expect(byToken.map((g) => [g.key, g.runs, g.costUsd])).toEqual([
      [null, 1, 4],
      ['ci', 2, 1.5],
    ]);
    expect(await store.admin.usageSummary({ by: 'hook', since: T0 + 50_000, until: T0 + 60_000 })).toEqual(
      [],
    );
  });

  it('with a bucket, splits each group by the UTC hour or day its runs finished in', async () => {
    const HOUR = 3_600_000;
    // T0 is 03:04:05 UTC on 2 January 2025: its hour starts at 03:00, its day at midnight.
    const hourOf = (ms: number) => new Date(ms - (ms % HOUR)).toISOString();
    const a1 = agent({ source: 'hook:a' });
    const a2 = agent({ source: 'hook:a' });
    const a3 = agent({ source: 'hook:a' });
    const b1 = agent({ source: 'hook:b' });
    const b2 = agent({ source: 'hook:b' });
    await finish(a1, usage({ costUsd: 1 }), T0 + 5000);
    await finish(a2, usage({ costUsd: 2 }), T0 + 10_000);
    await finish(a3, usage({ costUsd: null, inputTokens: 10 }), T0 + HOUR);
    await finish(b1, usage({ costUsd: 5 }), T0 + 6000);
    await finish(b2, usage({ costUsd: 0.5 }), T0 + 25 * HOUR);
    const window = { since: T0, until: T0 + 48 * HOUR };
    const hourly = await store.admin.usageSummary({ by: 'hook', bucket: 'hour', ...window });
    expect(hourly.map((g) => [g.at, g.key, g.runs, g.costUsd])).toEqual([
      ['2025-01-02T03:00:00.000Z', 'hook:b', 1, 5],
      ['2025-01-02T03:00:00.000Z', 'hook:a', 2, 3],
      [hourOf(T0 + HOUR), 'hook:a', 1, null],
      [hourOf(T0 + 25 * HOUR), 'hook:b', 1, 0.5],
    ]);
    expect(hourly[1]).toEqual({
      key: 'hook:a',
      at: '2025-01-02T03:00:00.000Z',
      runs: 2,
      inputTokens: 4700,
      outputTokens: 240,
      cacheReadTokens: 4000,
      cacheWriteTokens: 600,
      costUsd: 3,
    });
    const daily = await store.admin.usageSummary({ by: 'hook', bucket: 'day', ...window });
    expect(daily.map((g) => [g.at, g.key, g.runs, g.costUsd, g.inputTokens])).toEqual([
      ['2025-01-02T00:00:00.000Z', 'hook:b', 1, 5, 2350],
      ['2025-01-02T00:00:00.000Z', 'hook:a', 3, 3, 4710],
      ['2025-01-03T00:00:00.000Z', 'hook:b', 1, 0.5, 2350],
    ]);
    const byModel = await store.admin.usageSummary({ by: 'model', bucket: 'day', ...window });
    expect(byModel.map((g) => [g.at, g.key, g.runs])).toEqual([
      ['2025-01-02T00:00:00.000Z', 'claude/claude-sonnet-4-5', 4],
      ['2025-01-03T00:00:00.000Z', 'claude/claude-sonnet-4-5', 1],
    ]);
    // Without a bucket, the same runs as one row per group and no `at`.
    const whole = await store.admin.usageSummary({ by: 'hook', ...window });
    expect(whole.map((g) => [g.key, g.runs, 'at' in g])).toEqual([
      ['hook:b', 2, false],
      ['hook:a', 3, false],
    ]);
  });
});
