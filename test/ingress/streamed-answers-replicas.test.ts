/**
 * Streamed answers across two replicas on PostgreSQL (docs/callers.md, "Streamed
 * answers"; docs/postgres.md): the stream is held on replica A, which runs no workers,
 * while replica B executes the run. B publishes the reply's pieces with NOTIFY; A
 * LISTENs and hands them to the stream; `finished` follows B's notice that the run
 * finished (A reads the run once, then: no poll of its own). Also measures the
 * publish-to-receipt delay of the pieces between replicas.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PgStore } from '../../src/store/postgres/pg-store.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { isStream, postStream } from '../helpers/sse.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const PIECES = 40;

describe.runIf(PG_ENABLED)('streamed answers across two replicas on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let llm: FakeOpenAi;
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    database = await createTestDatabase();
    llm = await startFakeOpenAi({
      apiKey: 'sk-test',
      streamDelayMs: 25,
      reply: () => ({ stream: Array.from({ length: PIECES }, (_, i) => `piece${i} `) }),
    });
    const config = {
      store: { driver: 'postgres', url: database.url },
      hooks: { maxWaitSeconds: 20 },
      models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
      agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
    };
    // A's safety poll is out of the way: only B's notice can end A's streams in time.
    a = await startTestGateway(config, { workers: false, streamSafetyPollMs: 60_000 });
    b = await startTestGateway(config, { workers: true });
    // A's LISTEN is in place before any run streams.
    await (a.gateway.store as PgStore).listening();
  }, 60_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await llm?.close();
    await database?.drop();
  });

  it('A holds the stream while B runs the model: the deltas arrive live and join to the reply', async () => {
    const answer = await postStream(`${a.url}/hooks/agent`, {
      message: 'across replicas',
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    if (!isStream(answer)) throw new Error(`not a stream: ${answer.status} ${answer.text}`);
    await answer.ended;
    const names = answer.events.map((e) => e.event);
    expect(names[0]).toBe('accepted');
    expect(names.at(-1)).toBe('finished');
    const finished = answer.events.at(-1)?.data;
    const expected = Array.from({ length: PIECES }, (_, i) => `piece${i} `).join('');
    expect(finished).toMatchObject({ status: 'succeeded', reply: expected });
    expect(answer.joined()).toBe(expected);
    // Live, in batches (≤ 50 ms each) while B streamed for about a second: many deltas, not one.
    const deltas = answer.events.filter((e) => e.event === 'delta');
    expect(deltas.length).toBeGreaterThan(5);
    expect((deltas.at(-1)?.at ?? 0) - (deltas[0]?.at ?? 0)).toBeGreaterThan(500);
    // B executed it: A has no workers, and only B's pieces came over NOTIFY.
    const delays = a.gateway.deltas.recentDelays();
    expect(delays.length).toBeGreaterThan(5);
    const sorted = [...delays].sort((x, y) => x - y);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    // The figure docs/postgres.md reports: NOTIFY publish to receipt on the other replica.
    console.log(
      `cross-replica delta delay over ${delays.length} notifications: ` +
        `median ${at(0.5)} ms, p95 ${at(0.95)} ms, max ${sorted.at(-1)} ms`,
    );
    expect(at(0.5)).toBeLessThan(200);
  });

  it("A learns from B's notice that the run finished: one read of the run, no poll while it streams", async () => {
    const store = a.gateway.store;
    const getRun = store.getRun.bind(store);
    let reads = 0;
    store.getRun = (runId) => {
      reads += 1;
      return getRun(runId);
    };
    try {
      const answer = await postStream(`${a.url}/hooks/agent`, {
        message: 'finished by the other replica',
        deliver: false,
        wakeMode: 'next-heartbeat',
      });
      if (!isStream(answer)) throw new Error(`not a stream: ${answer.status} ${answer.text}`);
      await answer.ended;
      const finished = answer.events.at(-1);
      expect(finished?.event).toBe('finished');
      expect(finished?.data.status).toBe('succeeded');
      // About a second of streaming: a stream reading its run every 500 ms would have read it thrice.
      expect(reads).toBe(1);
      // At once after B recorded it, not at a poll of A's (60 s away).
      const lag = (finished?.at ?? 0) - Date.parse(finished?.data.finishedAt);
      expect(lag).toBeLessThan(1000);
    } finally {
      store.getRun = getRun;
    }
  });
});
