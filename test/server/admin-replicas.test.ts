/**
 * The operators' API across replicas (docs/operating.md, "Admin API"): two
 * gateways on one PostgreSQL database. Replica A runs no workers; replica B
 * does. A run accepted by A and executed by B is listed the same by both; a
 * retry asked of A is committed through the accept path (whose NOTIFY reaches
 * B) and executed by B; a redelivery asked of A is delivered by B's engine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../fakes/telegram.js';
import { ADMIN_TOKEN, readAnswer, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const BOT = '123456:TEST-token';

describe.runIf(PG_ENABLED)('admin API across two replicas on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let tg: Awaited<ReturnType<typeof startFakeTelegram>>;
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    database = await createTestDatabase();
    tg = await startFakeTelegram({ token: BOT, chats: [4242] });
    const config = {
      store: { driver: 'postgres', url: database.url },
      channels: { telegram: { botToken: BOT, apiBaseUrl: tg.url } },
    };
    a = await startTestGateway(config, { workers: false });
    b = await startTestGateway(config, { workers: true });
  }, 60_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await tg?.close();
    await database?.drop();
  });

  const status = async (gw: TestGateway, id: string) => (await gw.admin(`/api/runs/${id}`)).body;

  it('lists, retries and redelivers through one replica what another executes', async () => {
    const accepted = await a.hook('agent', {
      message: 'hello',
      deliver: true,
      channel: 'telegram',
      to: '4242',
      wakeMode: 'next-heartbeat', // no heartbeat reply to the same chat meanwhile
    });
    expect(accepted.status, accepted.text).toBe(202);
    const id = accepted.body.runId;
    await waitFor(
      async () => (await status(a, id)).delivery.status === 'delivered',
      'B to run and deliver it',
    );
    expect(tg.messagesFor(4242)).toHaveLength(1);
    const [listedA, listedB] = await Promise.all([a.admin('/api/runs'), b.admin('/api/runs')]);
    expect(listedA.body).toEqual(listedB.body);
    expect(listedA.body.runs[0]).toMatchObject({ runId: id, status: 'succeeded', source: 'hook:agent' });

    const retried = await readAnswer(
      await fetch(`${a.url}/api/runs/${id}/retry`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      }),
    );
    expect(retried.status, retried.text).toBe(202);
    const retry = await waitFor(async () => {
      const run = await status(b, retried.body.runId);
      return run.delivery.status === 'delivered' ? run : undefined;
    }, 'B to run and deliver the retry');
    expect(retry.status).toBe('succeeded');
    expect(tg.messagesFor(4242)).toHaveLength(2);
    expect((await b.admin('/api/runs?limit=1')).body.runs[0]).toMatchObject({
      runId: retried.body.runId,
      retryOf: id,
    });

    const redelivered = await readAnswer(
      await fetch(`${a.url}/api/runs/${id}/redeliver`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      }),
    );
    expect(redelivered.status, redelivered.text).toBe(202);
    await waitFor(() => tg.messagesFor(4242).length === 3, "B's delivery engine to send it again");
    await waitFor(
      async () => (await status(a, id)).delivery.status === 'delivered',
      'the run delivered again',
    );
    const deliveries = (await a.admin('/api/deliveries?status=delivered')).body.deliveries;
    expect(deliveries.filter((d: { runId: string }) => d.runId === id)).toHaveLength(2);
  }, 60_000);
});
