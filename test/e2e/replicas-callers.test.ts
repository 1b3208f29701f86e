/**
 * The callers' features (docs/callers.md, "Across PostgreSQL replicas") across
 * two replicas on one PostgreSQL database: a `waitForCompletion` request
 * answered by a replica that does not run the run (its workers are off, so the
 * other replica executes it) still gets the run's result, learnt from the
 * store; and the hook-token status endpoint of either replica shows a run
 * accepted by the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sleep } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

describe.runIf(PG_ENABLED)('waitForCompletion and run status across two replicas', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let llm: FakeOpenAi;
  /** Accepts and answers, runs nothing. */
  let front: TestGateway;
  /** Runs what is queued. */
  let back: TestGateway;

  beforeAll(async () => {
    database = await createTestDatabase();
    llm = await startFakeOpenAi({
      apiKey: 'sk-test',
      reply: async (body) => {
        await sleep(300);
        return `ran: ${String(body.messages.at(-1)?.content ?? '').includes('across') ? 'across' : 'other'}`;
      },
    });
    const config = {
      store: { driver: 'postgres', url: database.url },
      hooks: { maxWaitSeconds: 20 },
      models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
      agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
    };
    front = await startTestGateway(config, { workers: false });
    back = await startTestGateway(config, { workers: true });
  }, 60_000);
  afterAll(async () => {
    await front?.stop();
    await back?.stop();
    await llm?.close();
    await database?.drop();
  });

  it('a replica that does not run the run still answers the waiting request with its result', async () => {
    const started = Date.now();
    const answer = await front.hook('agent', {
      message: 'run me across replicas',
      deliver: false,
      wakeMode: 'next-heartbeat',
      waitForCompletion: true,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ ok: true, status: 'succeeded', reply: 'ran: across', error: null });
    // Learnt by polling the store (every 500 ms), not after the 20 s wait.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(llm.requests).toHaveLength(1);
  });

  it("either replica's status endpoint shows a run the other accepted", async () => {
    const accepted = await back.hook('agent', { message: 'status please', deliver: false });
    expect(accepted.status).toBe(202);
    const response = await fetch(`${front.url}/hooks/runs/${accepted.body.runId}`, {
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ runId: accepted.body.runId, agentId: 'main' });
  });
});
