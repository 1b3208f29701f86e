/**
 * Alerts across two gateways on one PostgreSQL database (docs/alerts.md, "Several replicas"):
 * both run workers, so either may execute a failing run; each failure sends exactly one alert
 * message, the cap holds for both together, and the hour's summary is sent once.
 */

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { parseExposition, seriesOf } from '../metrics/exposition.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const BOT = '777:alerts-replicas-token';
const ALERT_CHAT = 4242;
const HOUR = 3600_000;

describe.runIf(PG_ENABLED)('alerts across two replicas on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let llm: FakeOpenAi;
  let tg: FakeTelegram;
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    database = await createTestDatabase();
    llm = await startFakeOpenAi({ reply: () => ({ status: 400, error: 'no such model' }) });
    tg = await startFakeTelegram({ token: BOT, chats: [ALERT_CHAT] });
    const config = {
      store: { driver: 'postgres', url: database.url },
      models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
      agents: { defaults: { model: 'fake/gpt-4o-mini' } },
      channels: { telegram: { botToken: BOT, apiBaseUrl: tg.url } },
      alerts: { channel: 'telegram', to: String(ALERT_CHAT), maxPerHour: 4 },
    };
    a = await startTestGateway(config, { workers: true, alerts: { pollMs: 50 } });
    b = await startTestGateway(config, { workers: true, alerts: { pollMs: 50 } });
  }, 60_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await tg?.close();
    await llm?.close();
    await database?.drop();
  });

  const alertsTotal = async (gw: TestGateway) =>
    seriesOf(parseExposition((await gw.admin('/metrics')).text), 'agentgate_alerts_total');
  /** One status summed over both replicas (each counts what it did). */
  const total = async (status: string) =>
    ((await alertsTotal(a))[`status=${status}`] ?? 0) + ((await alertsTotal(b))[`status=${status}`] ?? 0);

  it('each failure sends one alert, whichever replica ran it; past the cap, one summary for both', async () => {
    const runIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      const gw = i % 2 === 0 ? a : b;
      const answer = await gw.hook('agent', {
        message: `job ${i}`,
        deliver: false,
        wakeMode: 'next-heartbeat',
      });
      expect(answer.status, answer.text).toBe(202);
      runIds.push(answer.body.runId);
    }
    await waitFor(() => tg.messagesFor(ALERT_CHAT).length === 4, 'four alert messages');
    await sleep(500);
    const texts = tg.messagesFor(ALERT_CHAT).map((m) => m.text);
    expect(texts).toHaveLength(4);
    for (const runId of runIds) expect(texts.filter((text) => text.includes(runId))).toHaveLength(1);
    expect(await total('queued')).toBe(4);
    expect(await total('sent')).toBe(4);

    // Six more failures at once on both replicas: the hour already holds 4 alert messages.
    const more = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? a : b).hook('agent', {
          message: `burst ${i}`,
          deliver: false,
          wakeMode: 'next-heartbeat',
        }),
      ),
    );
    for (const answer of more) expect(answer.status).toBe(202);
    await waitFor(async () => (await total('suppressed')) === 6, 'six failures suppressed');
    expect(tg.messagesFor(ALERT_CHAT)).toHaveLength(4);

    // An hour later (the rows moved back), both replicas' summary jobs look: one summary is sent.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query(`UPDATE deliveries SET created_at = created_at - $1 WHERE kind = 'alert'`, [
        HOUR + 1000,
      ]);
    } finally {
      await client.end();
    }
    await waitFor(() => tg.messagesFor(ALERT_CHAT).length === 5, 'the summary');
    await sleep(500);
    expect(tg.messagesFor(ALERT_CHAT)).toHaveLength(5);
    expect(tg.messagesFor(ALERT_CHAT)[4]?.text).toContain('6 more failures in the last hour');
    expect(await total('summarized')).toBe(6);
    await waitFor(async () => (await total('sent')) === 5, 'the summary counted as sent');
  });
});
