/**
 * Budgets through the budget book and the worker on the manual clock (docs/budgets.md): a run's
 * usage is added to its budgets' counters with its completion; once a budget is spent, the book
 * refuses its scope until the window's end (the Retry-After the door sends), the runs already
 * queued in it stay queued — deferred to the window's end, not failed, not counted as attempts —
 * and they start when the window rolls over, while a run of another scope goes on at once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunBudgets, RunWorker } from '../../src/agents/worker.js';
import { BudgetBook } from '../../src/budgets/book.js';
import { budgetsOf, runScopes } from '../../src/budgets/scopes.js';
import { HeldProvider, NO_RETRY, queueRun, type Rig, rig, silentLog } from '../helpers/agent-rig.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { waitFor } from '../helpers/wait.js';

const HOUR = 3_600_000;
/** Ten minutes before a UTC hour ends. */
const T0 = Date.UTC(2026, 0, 5, 10, 50, 0);
const HOUR_END = Date.UTC(2026, 0, 5, 11, 0, 0);

let llm: HeldProvider;
let setup: Rig;
let clock: ManualClock;
let book: BudgetBook;
let worker: RunWorker;

beforeEach(async () => {
  llm = await HeldProvider.start();
  setup = rig(llm.fake.baseUrl);
  clock = new ManualClock(T0);
  book = new BudgetBook(
    budgetsOf([
      { id: 'github-hourly', hook: 'github', perHour: { tokens: 100 } },
      { id: 'everything', perDay: { usd: 50 } },
    ]),
    { store: setup.store, clock, log: silentLog, pollMs: 60_000 },
  );
  await book.start();
  const budgets: RunBudgets = book;
  worker = new RunWorker({
    store: setup.store,
    config: setup.config,
    models: setup.models,
    log: silentLog,
    owner: 'test-host:1:budgets',
    providerRetry: NO_RETRY,
    clock,
    pollMs: 60_000,
    budgets,
  });
});

afterEach(async () => {
  await worker.stop(0);
  await book.stop();
  await llm.close();
  await setup.close();
});

const statusOf = async (runId: string) => (await setup.store.getRun(runId))?.status;
const github = { source: 'hook:github', hookId: 'github' };

describe('budgets: the book and the worker', () => {
  it('adds a run’s tokens to its budgets; once spent, refuses the scope and holds its queued runs to the hour’s end', async () => {
    const first = await queueRun(setup.store, github);
    await worker.start();
    (await llm.received(1)).answer({ usage: { prompt: 90, completion: 20 }, reply: 'done' });
    await waitFor(async () => (await statusOf(first.id)) === 'succeeded', 'the first run');

    // The completion's spend signal read the book again: 110 of 100 tokens.
    const spent = await waitFor(
      () => book.states().find((s) => s.id === 'github-hourly' && s.exceeded),
      'the budget exceeded',
    );
    expect(spent).toMatchObject({ scope: 'hook:github', window: 'hour', spent: { tokens: 110 } });
    expect(spent.resetsAt).toBe(HOUR_END);
    expect(book.states().find((s) => s.id === 'everything')).toMatchObject({ exceeded: false });

    // The door's answer: refused in the hook's scope, with the seconds to the hour's end.
    const refusing = book.refusal(() => runScopes({ agentId: 'main', hookId: 'github' }), clock.now());
    expect(refusing?.id).toBe('github-hourly');
    expect(Math.ceil(((refusing?.resetsAt ?? 0) - clock.now()) / 1000)).toBe(600);
    expect(book.refusal(() => runScopes({ agentId: 'main', hookId: 'agent' }), clock.now())).toBeUndefined();

    // Queued in the spent scope: claimed, put back until the hour's end, no model call.
    const waiting = await queueRun(setup.store, github);
    const other = await queueRun(setup.store, { source: 'hook:agent', hookId: 'agent' });
    worker.notify();
    (await llm.received(2)).answer({ usage: { prompt: 5, completion: 5 }, reply: 'other done' });
    await waitFor(async () => (await statusOf(other.id)) === 'succeeded', 'the run of another scope');
    const held = await waitFor(async () => {
      const view = await setup.store.getRun(waiting.id);
      return view?.notBefore ? view : undefined;
    }, 'the held run deferred');
    expect(held.status).toBe('queued');
    expect(held.notBefore).toBe(new Date(HOUR_END).toISOString());
    expect(llm.calls).toHaveLength(2);

    // A minute before the hour's end: still waiting.
    await clock.advance(HOUR_END - clock.now() - 60_000);
    expect(await statusOf(waiting.id)).toBe('queued');
    expect(llm.calls).toHaveLength(2);

    // The hour rolls over: the book starts the new window clean, the held run starts.
    await clock.advance(60_000);
    (await llm.received(3)).answer('after the rollover');
    await waitFor(
      async () => (await statusOf(waiting.id)) === 'succeeded',
      'the held run after the rollover',
    );
    expect(book.refusal(() => runScopes({ agentId: 'main', hookId: 'github' }), clock.now())).toBeUndefined();
    const fresh = await waitFor(
      () => book.states().find((s) => s.id === 'github-hourly' && s.start === HOUR_END),
      'the new window read',
    );
    expect(fresh.exceeded).toBe(false);
    expect(fresh.resetsAt).toBe(HOUR_END + HOUR);
  });
});
