/**
 * Two replicas racing at a budget's limit on one PostgreSQL database (docs/budgets.md): each
 * worker reads the spend from the store before a run executes, so once the limit is reached
 * no run starts anywhere; the overspend is at most the runs already started when it was
 * reached (each worker's slots, here 2 + 2). Every other run stays queued, deferred to the
 * window's end — none lost, none failed — and the spend read back is exactly what the finished
 * runs used.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunWorker } from '../../src/agents/worker.js';
import { BudgetBook } from '../../src/budgets/book.js';
import { budgetsOf } from '../../src/budgets/scopes.js';
import { PgStore } from '../../src/store/postgres/pg-store.js';
import { windowStart } from '../../src/store/rules/budgets.js';
import type { NewRun } from '../../src/store/types.js';
import { systemClock } from '../../src/util/clock.js';
import { startFakeOpenAi } from '../fakes/openai.js';
import { NO_RETRY, queueRun, rig, silentLog } from '../helpers/agent-rig.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const PER_RUN = 15;
const LIMIT = 60;
const SLOTS = 2;

describe.runIf(PG_ENABLED)('budgets across two PostgreSQL replicas', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  }, 30_000);
  afterAll(() => database?.drop(), 30_000);

  it('racing at the limit, they overspend by at most the runs already started; the rest wait queued', async () => {
    const llm = await startFakeOpenAi({ apiKey: 'sk-test', usage: { prompt: 10, completion: 5 } });
    const setup = rig(llm.baseUrl, { defaults: { maxConcurrent: SLOTS } });
    const stores = [
      new PgStore({ url: database.url, poolMax: 4 }),
      new PgStore({ url: database.url, poolMax: 4 }),
    ];
    const budgets = budgetsOf([{ id: 'all-daily', perDay: { tokens: LIMIT } }]);
    const books = stores.map(
      (store) =>
        new BudgetBook(budgets, {
          store,
          clock: systemClock,
          log: silentLog,
          pollMs: 1000,
        }),
    );
    const workers = stores.map(
      (store, index) =>
        new RunWorker({
          store,
          config: setup.config,
          models: setup.models,
          log: silentLog,
          owner: `test-host:${index}:race`,
          providerRetry: NO_RETRY,
          pollMs: 50,
          budgets: books[index],
        }),
    );
    try {
      for (const book of books) await book.start();
      const runs: NewRun[] = [];
      // Queued through the first replica's store (PgStore and SqliteStore accept alike).
      for (let i = 0; i < 20; i++)
        runs.push(
          await queueRun(stores[0] as unknown as Parameters<typeof queueRun>[0], {
            source: 'hook:agent',
            hookId: 'agent',
          }),
        );
      await Promise.all(workers.map((worker) => worker.start()));

      const statuses = async () =>
        Promise.all(runs.map(async (run) => (await stores[0]?.getRun(run.id)) ?? undefined));
      // Settled: every run finished or deferred (queued with notBefore), none running.
      const settled = await waitFor(async () => {
        const views = await statuses();
        const done = views.every((v) => v?.status === 'succeeded' || (v?.status === 'queued' && v.notBefore));
        return done ? views : undefined;
      }, 'every run finished or waiting');
      const succeeded = settled.filter((v) => v?.status === 'succeeded').length;
      const waiting = settled.filter((v) => v?.status === 'queued').length;
      expect(settled.some((v) => v?.status === 'failed')).toBe(false);
      expect(succeeded + waiting).toBe(20);
      // At least the limit was reached; at most the runs in flight when it was went past it.
      expect(succeeded * PER_RUN).toBeGreaterThanOrEqual(LIMIT);
      expect(succeeded).toBeLessThanOrEqual(LIMIT / PER_RUN + 2 * SLOTS);
      expect(waiting).toBeGreaterThan(0);
      const [spent] = await (stores[1] as PgStore).budgets.readSpend([
        { scope: 'all', window: 'day', start: windowStart('day', Date.now()) },
      ]);
      expect(spent?.tokens).toBe(succeeded * PER_RUN);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop(0)));
      for (const book of books) await book.stop();
      for (const store of stores) await store.close();
      await llm.close();
      await setup.close();
    }
  }, 60_000);
});
