/**
 * Store conformance for a run's steps and approval (docs/operating.md, "A run's steps" and
 * "Approving tool calls"), the same tests for every driver (drivers.ts): steps are appended
 * only under the run's lease, once per index, listed in order and counted on the RunView;
 * a waiting run holds no lease, blocks its session key, takes one decision and is queued again;
 * retention deletes the steps with their run.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ModelStep, NewAlert, NewRun, RunCompletion, Store, ToolStep } from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const LEASE = 60_000;
let counter = 0;
const nextId = (prefix: string) => `${prefix}_st${String(++counter).padStart(6, '0')}`;

function agent(overrides: Partial<NewRun> = {}): NewRun {
  return {
    id: nextId('run'),
    agentId: 'main',
    sessionKey: nextId('hook:st'),
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

function completion(run: NewRun, owner = 'worker'): RunCompletion {
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
  };
}

const modelStep = (index: number, calls: ModelStep['calls'] = []): ModelStep => ({
  kind: 'model',
  index,
  text: index === 0 ? '' : 'the answer',
  calls,
  status: 'ok',
  startedAt: T0 + index * 10,
  finishedAt: T0 + index * 10 + 5,
});

const toolStep = (index: number, overrides: Partial<ToolStep> = {}): ToolStep => ({
  kind: 'tool',
  index,
  callId: `call_${index}`,
  tool: 'repo.get_pull_request',
  arguments: { number: 7, nested: { list: [1, 'two', null], ünï: '✓' } },
  result: '{"title":"Fix"}',
  status: 'ok',
  startedAt: T0 + index * 10,
  finishedAt: T0 + index * 10 + 5,
  ...overrides,
});

const CALL = { callId: 'call_1', tool: 'repo.get_pull_request', arguments: { number: 7 } };

describe.each(DRIVERS)('Store conformance, steps: $name', (driver) => {
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

  const claimed = async (owner = 'worker', at = T0 + 1000) =>
    (await store.runs.claimRuns(owner, at, LEASE, 10)).map((run) => run.id);

  it('appends under the lease and lists the steps in index order, as they were appended', async () => {
    const run = agent();
    await accept(run);
    expect(await claimed()).toEqual([run.id]);
    const steps = [
      modelStep(0, [CALL]),
      toolStep(1),
      toolStep(2, { status: 'error', result: 'boom' }),
      modelStep(3),
    ];
    // Appended out of order: the list is by index, whatever the order of the commits.
    for (const step of [steps[0], steps[2], steps[1], steps[3]]) {
      expect(await store.steps.append(run.id, 'worker', step as ModelStep | ToolStep)).toBe(true);
    }
    expect(await store.steps.list(run.id)).toEqual(steps);
    expect((await store.getRun(run.id))?.steps).toBe(4);
    expect(await store.steps.list('run_unknown')).toEqual([]);
  });

  it('an index appended again is not written again, nor counted twice', async () => {
    const run = agent();
    await accept(run);
    await claimed();
    expect(await store.steps.append(run.id, 'worker', toolStep(0))).toBe(true);
    expect(await store.steps.append(run.id, 'worker', toolStep(0, { result: 'other' }))).toBe(true);
    expect((await store.steps.list(run.id)).map((s) => (s as ToolStep).result)).toEqual(['{"title":"Fix"}']);
    expect((await store.getRun(run.id))?.steps).toBe(1);
  });

  it('refuses a step without the lease: another owner, a queued run, a finished run', async () => {
    const run = agent();
    await accept(run);
    expect(await store.steps.append(run.id, 'worker', toolStep(0))).toBe(false); // queued
    await claimed();
    expect(await store.steps.append(run.id, 'intruder', toolStep(0))).toBe(false);
    expect(await store.runs.completeRun(completion(run))).toBe(true);
    expect(await store.steps.append(run.id, 'worker', toolStep(0))).toBe(false); // finished
    expect(await store.steps.list(run.id)).toEqual([]);
    expect((await store.getRun(run.id))?.steps).toBe(0);
  });

  it('a lease taken over after expiry fences the old owner out', async () => {
    const run = agent();
    await accept(run);
    await claimed('old', T0);
    expect(await claimed('new', T0 + LEASE + 1)).toEqual([run.id]);
    expect(await store.steps.append(run.id, 'old', toolStep(0))).toBe(false);
    expect(await store.steps.append(run.id, 'new', toolStep(0))).toBe(true);
    expect((await store.getRun(run.id))?.steps).toBe(1);
  });

  it('the run list shows the count too, and a run without steps has 0 and waits for nothing', async () => {
    const run = agent();
    const plain = agent();
    await accept(run);
    await accept(plain);
    await claimed();
    await store.steps.append(run.id, 'worker', modelStep(0));
    const page = await store.admin.listRuns({ limit: 10 });
    expect(page?.runs.find((r) => r.runId === run.id)?.steps).toBe(1);
    expect(page?.runs.find((r) => r.runId === plain.id)).toMatchObject({ steps: 0, waitingFor: null });
  });

  it('retention deletes a finished run’s steps and approvals with it', async () => {
    const run = agent();
    await accept(run);
    await claimed();
    await store.steps.append(run.id, 'worker', modelStep(0, [CALL]));
    expect((await store.steps.wait(run.id, 'worker', WAITING, T0 + 100)).waiting).toBe(true);
    expect(await store.steps.decide(run.id, 'approve', T0 + 200)).toBe('ok');
    await claimed('worker', T0 + 300);
    await store.steps.append(run.id, 'worker', toolStep(1));
    expect(await store.runs.completeRun(completion(run))).toBe(true);
    const batch = await store.pruneBatch('runs', T0 + 3_600_000, 100);
    expect(batch.deleted).toBe(1);
    expect(await store.steps.list(run.id)).toEqual([]);
    expect(await store.steps.decision(run.id, 1)).toBeUndefined();
  });

  const WAITING = { step: 1, tool: 'tickets.create_ticket', arguments: { title: 'Hi', tags: ['a'] } };

  it('a waiting run holds no lease, shows what it waits for, and is not claimable until decided', async () => {
    const run = agent();
    await accept(run);
    await claimed();
    expect((await store.steps.wait(run.id, 'intruder', WAITING, T0 + 100)).waiting).toBe(false);
    expect((await store.steps.wait(run.id, 'worker', WAITING, T0 + 100)).waiting).toBe(true);
    expect(await store.getRun(run.id)).toMatchObject({ status: 'waiting', waitingFor: WAITING });
    expect(await store.steps.append(run.id, 'worker', toolStep(1))).toBe(false);
    expect(await store.runs.renewLeases('worker', [run.id], T0 + 10 * LEASE)).toBeUndefined();
    // Long past any lease: still not claimable, still unfinished.
    expect(await claimed('other', T0 + 100 * LEASE)).toEqual([]);
    expect(await store.unfinishedRuns([run.id])).toEqual(new Set([run.id]));
    expect((await store.admin.listRuns({ limit: 10, status: 'waiting' }))?.runs.map((r) => r.runId)).toEqual([
      run.id,
    ]);
    expect(await store.steps.decision(run.id, 1)).toBeUndefined();

    expect(await store.steps.decide(run.id, 'deny', T0 + 200)).toBe('ok');
    expect(await store.getRun(run.id)).toMatchObject({ status: 'queued', waitingFor: null });
    expect(await store.steps.decision(run.id, 1)).toBe('deny');
    expect(await claimed('other', T0 + 300)).toEqual([run.id]);
    expect(await store.steps.decision(run.id, 1)).toBe('deny');
  });

  it('later runs of the waiting run’s session key wait behind it', async () => {
    const first = agent();
    const second = agent({ sessionKey: first.sessionKey, createdAt: T0 + 1 });
    const other = agent();
    await accept(first);
    await claimed();
    await store.steps.wait(first.id, 'worker', WAITING, T0 + 100);
    await accept(second);
    await accept(other);
    expect(await claimed('worker', T0 + 200)).toEqual([other.id]);
    await store.steps.decide(first.id, 'approve', T0 + 300);
    expect(await claimed('worker', T0 + 400)).toEqual([first.id]);
    expect(await store.runs.completeRun({ ...completion(first), finishedAt: T0 + 500 })).toBe(true);
    expect(await claimed('worker', T0 + 600)).toEqual([second.id]);
  });

  it('a decision applies once: a second one, or one for a run not waiting, is not_waiting', async () => {
    const run = agent();
    await accept(run);
    expect(await store.steps.decide(run.id, 'approve', T0)).toBe('not_waiting'); // queued
    expect(await store.steps.decide('run_unknown', 'approve', T0)).toBe('not_waiting');
    await claimed();
    await store.steps.wait(run.id, 'worker', WAITING, T0 + 100);
    const answers = await Promise.all([
      store.steps.decide(run.id, 'approve', T0 + 200),
      store.steps.decide(run.id, 'deny', T0 + 200),
    ]);
    expect([...answers].sort()).toEqual(['not_waiting', 'ok']);
    const kept = await store.steps.decision(run.id, 1);
    expect(kept).toBe(answers[0] === 'ok' ? 'approve' : 'deny');
  });

  it('one decision across replicas, each store deciding at once', async () => {
    if (!driver.replicas) return;
    const other = driver.open();
    const run = agent();
    await accept(run);
    await claimed();
    await store.steps.wait(run.id, 'worker', WAITING, T0 + 100);
    const answers = await Promise.all([
      store.steps.decide(run.id, 'approve', T0 + 200),
      other.steps.decide(run.id, 'deny', T0 + 200),
    ]);
    expect(answers.filter((a) => a === 'ok')).toHaveLength(1);
  });

  it('a wait enqueues its approval request with it; a lost lease enqueues none', async () => {
    const run = agent();
    await accept(run);
    await claimed();
    const alert: NewAlert = {
      event: 'approval.requested',
      refId: run.id,
      channel: 'telegram',
      to: '-100',
      text: 'run waits for approval',
      maxPerHour: 20,
    };
    expect((await store.steps.wait(run.id, 'intruder', WAITING, T0 + 100, alert)).waiting).toBe(false);
    expect(await store.steps.wait(run.id, 'worker', WAITING, T0 + 100, alert)).toEqual({
      waiting: true,
      alert: 'queued',
    });
    const heads = (await store.outbox.deliveryHeads(100)).filter((item) => item.kind === 'alert');
    expect(heads.map((item) => [item.refId, item.text])).toEqual([[run.id, 'run waits for approval']]);
  });

  it('past the timeout a waiting call is denied and the run queued again', async () => {
    const old = agent();
    const recent = agent();
    await accept(old);
    await accept(recent);
    await claimed();
    await store.steps.wait(old.id, 'worker', WAITING, T0 + 100);
    await store.steps.wait(recent.id, 'worker', WAITING, T0 + 5000);
    expect(await store.steps.expireWaits(T0 + 1000, T0 + 6000)).toEqual([old.id]);
    expect(await store.steps.decision(old.id, 1)).toBe('deny');
    expect((await store.getRun(old.id))?.status).toBe('queued');
    expect((await store.getRun(recent.id))?.status).toBe('waiting');
    expect(await store.steps.expireWaits(T0 + 1000, T0 + 7000)).toEqual([]);
  });
});
