/**
 * Fair sharing of worker slots between hooks and per-hook caps (docs/callers.md,
 * "Per-hook limits"), over real HTTP with the real worker and a slow loopback
 * fake of the model: a flood of runs on one hook does not keep a single run of
 * another hook waiting longer than about one run's duration, and
 * `maxConcurrentRuns` holds while the other hooks' runs use the free slots.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** How long the fake model takes per call: one run's duration. */
const RUN_MS = 500;
/** Scheduling and a loaded 2-core machine: generous, yet far below the wait behind the flood. */
const SLACK_MS = 1500;
const FLOOD = 40;

describe('fair sharing of worker slots between hooks', () => {
  let llm: FakeOpenAi;
  let gw: TestGateway;
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();

  beforeAll(async () => {
    llm = await startFakeOpenAi({
      apiKey: 'sk-test',
      reply: async (body) => {
        const last = String(body.messages.at(-1)?.content ?? '');
        const hook = /hook=(\w+)/.exec(last)?.[1] ?? 'other';
        inFlight.set(hook, (inFlight.get(hook) ?? 0) + 1);
        most.set(hook, Math.max(most.get(hook) ?? 0, inFlight.get(hook) ?? 0));
        await sleep(RUN_MS);
        inFlight.set(hook, (inFlight.get(hook) ?? 1) - 1);
        return `done ${hook}`;
      },
    });
  });
  afterAll(async () => {
    await llm?.close();
  });
  // A gateway of its own for each test: the second need not wait for the first one's flood
  // to drain (twenty rounds of RUN_MS) before its slots are shared by its two hooks only.
  beforeEach(async () => {
    const mapping = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      match: { path: id },
      messageTemplate: `hook=${id} n={{n}}`,
      deliver: false,
      wakeMode: 'next-heartbeat',
      ...extra,
    });
    gw = await startTestGateway(
      {
        hooks: { mappings: [mapping('flood'), mapping('capped', { maxConcurrentRuns: 1 })] },
        models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
        agents: { defaults: { model: 'fake/gpt-test', maxConcurrent: 2, heartbeat: { every: '0' } } },
      },
      { workers: true },
    );
  });
  afterEach(async () => {
    await gw?.stop();
    // Runs the stop cut short are still asleep in the fake: wait them out, so the next test
    // counts only its own calls.
    await waitFor(() => [...inFlight.values()].every((n) => n === 0), 'the model calls of the last test');
    inFlight.clear();
    most.clear();
  });

  const finished = async (runIds: string[]) => {
    const views = await Promise.all(runIds.map(async (id) => (await gw.admin(`/api/runs/${id}`)).body));
    return views.filter((view) => view.status === 'succeeded').length;
  };

  it(`a run on another hook starts within one run's duration of a flood of ${FLOOD} runs`, async () => {
    const flood = await Promise.all(Array.from({ length: FLOOD }, (_, n) => gw.hook('flood', { n })));
    const floodIds = flood.map((answer) => answer.body.runId as string);
    expect(flood.every((answer) => answer.status === 202)).toBe(true);
    await waitFor(() => (inFlight.get('flood') ?? 0) === 2, 'the flood to take both slots');

    const sent = Date.now();
    const lone = await gw.hook('agent', {
      message: 'hook=lone',
      deliver: false,
      wakeMode: 'next-heartbeat',
      waitForCompletion: true,
    });
    const answered = Date.now() - sent;
    expect(lone.status).toBe(200);
    expect(lone.body).toMatchObject({ status: 'succeeded', reply: 'done lone' });
    const view = (await gw.admin(`/api/runs/${lone.body.runId}`)).body;
    const waited = Date.parse(view.startedAt) - Date.parse(view.createdAt);
    // It waited for a slot to free up (at most one run), not for the flood ahead of it.
    expect(waited).toBeLessThanOrEqual(RUN_MS + SLACK_MS);
    expect(answered).toBeLessThanOrEqual(2 * RUN_MS + SLACK_MS);
    expect(await finished(floodIds)).toBeLessThan(FLOOD / 2);
  }, 60_000);

  it('maxConcurrentRuns holds for its hook while other hooks use the free slots', async () => {
    const capped = await Promise.all(Array.from({ length: 5 }, (_, n) => gw.hook('capped', { n })));
    const others = await Promise.all(
      Array.from({ length: 3 }, () =>
        gw.hook('agent', { message: 'hook=free', deliver: false, wakeMode: 'next-heartbeat' }),
      ),
    );
    const ids = [...capped, ...others].map((answer) => answer.body.runId as string);
    await waitFor(async () => (await finished(ids)) === ids.length, 'every run to finish', 30_000);
    expect(most.get('capped')).toBe(1);
    // The other slot was not left idle: the other hook's runs ran beside the capped ones.
    expect(most.get('free')).toBeGreaterThanOrEqual(1);
    const views = await Promise.all(ids.map(async (id) => (await gw.admin(`/api/runs/${id}`)).body));
    const freeDone = Math.max(...views.slice(5).map((v) => Date.parse(v.finishedAt)));
    const cappedDone = Math.max(...views.slice(0, 5).map((v) => Date.parse(v.finishedAt)));
    expect(freeDone).toBeLessThan(cappedDone);
  }, 90_000);
});

describe('hooks.maxConcurrentRuns caps /hooks/agent', () => {
  it('runs /agent runs one at a time with a cap of 1, while a mapping hook uses the other slot', async () => {
    let inFlight = 0;
    let most = 0;
    const llm = await startFakeOpenAi({
      apiKey: 'sk-test',
      reply: async (body) => {
        const agentRun = String(body.messages.at(-1)?.content ?? '').includes('via agent');
        if (agentRun) most = Math.max(most, ++inFlight);
        await sleep(300);
        if (agentRun) inFlight--;
        return 'ok';
      },
    });
    const gw = await startTestGateway(
      {
        hooks: {
          maxConcurrentRuns: 1,
          mappings: [{ id: 'side', match: { path: 'side' }, messageTemplate: 'side', deliver: false }],
        },
        models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
        agents: { defaults: { model: 'fake/gpt-test', maxConcurrent: 3, heartbeat: { every: '0' } } },
      },
      { workers: true },
    );
    try {
      const body = {
        message: 'via agent',
        deliver: false,
        wakeMode: 'next-heartbeat',
        waitForCompletion: true,
      };
      const [side, ...answers] = await Promise.all([
        gw.hook('side', {}),
        ...Array.from({ length: 4 }, () => gw.hook('agent', body)),
      ]);
      expect(side?.status).toBe(202);
      expect(answers.map((answer) => answer.body.status)).toEqual(Array(4).fill('succeeded'));
      expect(most).toBe(1);
    } finally {
      await gw.stop();
      await llm.close();
    }
  });
});
