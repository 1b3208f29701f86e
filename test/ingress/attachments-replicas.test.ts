/**
 * Attachments across replicas (docs/attachments.md, docs/postgres.md): two gateways on one
 * PostgreSQL database, over real HTTP. One takes the request and runs no workers; the other
 * executes the run and gives the model the bytes the first committed — read from the shared
 * database, never from the memory of the replica that accepted them.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

describe.runIf(PG_ENABLED)('attachments across two PostgreSQL replicas', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let llm: FakeOpenAi;
  let front: TestGateway;
  let worker: TestGateway;

  beforeAll(async () => {
    database = await createTestDatabase();
    llm = await startFakeOpenAi({ reply: () => 'seen' });
    const config = {
      store: { driver: 'postgres', url: database.url },
      models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl } } },
      agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
    };
    front = await startTestGateway(config, { workers: false });
    worker = await startTestGateway(config, { workers: true });
  });
  afterAll(async () => {
    await front?.stop();
    await worker?.stop();
    await llm?.close();
    await database?.drop();
  });

  it('a run accepted on one replica gives the model the same bytes on the replica that executes it', async () => {
    const image = randomBytes(4096);
    const answer = await front.hook('agent', {
      message: 'look at this',
      attachments: [{ name: 'graph.png', mediaType: 'image/png', data: image.toString('base64') }],
    });
    expect(answer.status).toBe(202);
    const runId: string = answer.body.runId;
    const view = await waitFor(async () => {
      const run = (await worker.admin(`/api/runs/${runId}`)).body;
      return run?.status === 'succeeded' ? run : undefined;
    }, 'the run executed by the other replica');
    expect(view.attachments).toEqual([{ name: 'graph.png', mediaType: 'image/png', bytes: 4096 }]);
    const request = llm.requests.at(-1);
    const user = request?.body.messages.at(-1) as unknown as {
      content: { type: string; image_url?: { url: string } }[];
    };
    expect(user.content.find((part) => part.type === 'image_url')?.image_url?.url).toBe(
      `data:image/png;base64,${image.toString('base64')}`,
    );
  });
});
