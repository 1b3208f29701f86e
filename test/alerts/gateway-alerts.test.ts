/**
 * Alerts through a real gateway over real HTTP (docs/alerts.md): a fake OpenAI provider, a fake
 * Telegram Bot API and a callback receiver on loopback, the real SQLite store. A failed run, a
 * failed delivery and a failed callback each send one alert message to the alert chat; an alert
 * whose own delivery fails sends none; past maxPerHour the rest are summed up in one message
 * once the hour is over (the alert rows are moved an hour back in the store's file, through a
 * connection of the test's own); agentgate_alerts_total counts them on /metrics.
 */
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type CallbackReceiver, startCallbackReceiver } from '../fakes/callback-receiver.js';
import { type FakeOpenAi, type FakeOpenAiHandler, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { type StartOptions, startTestGateway, type TestGateway, writeConfig } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { parseExposition, seriesOf } from '../metrics/exposition.js';

const BOT = '777:alerts-test-token';
const ALERT_CHAT = 4242;
const REPLY_CHAT = 5150;
const BLOCKED_CHAT = 6060;
const HOUR = 3600_000;
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

/** A provider answer that fails the run at once (400 is not retried). */
const badRequest: FakeOpenAiHandler = () => ({
  status: 400,
  error: 'The model `gpt-nope` does not exist\nSECOND-LINE of the provider error',
  type: 'invalid_request_error',
});

interface Rig {
  gw: TestGateway;
  llm: FakeOpenAi;
  tg: FakeTelegram;
  receiver: CallbackReceiver;
  /** Makes every alert row `ms` older, as if it had been written that long ago. */
  age(ms: number): void;
  /** Saves the config file again with this `alerts` section (the gateway watches it). */
  rewrite(alerts: Record<string, unknown> | undefined): void;
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function rig(alerts: Record<string, unknown> | undefined, options: StartOptions = {}): Promise<Rig> {
  const llm = await startFakeOpenAi({ reply: badRequest });
  cleanup.push(() => llm.close());
  const tg = await startFakeTelegram({
    token: BOT,
    chats: [ALERT_CHAT, REPLY_CHAT, { id: BLOCKED_CHAT, blocked: true }],
  });
  cleanup.push(() => tg.close());
  const receiver = await startCallbackReceiver();
  cleanup.push(() => receiver.close());
  const configOf = (section: Record<string, unknown> | undefined) => ({
    models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
    agents: { defaults: { model: 'fake/gpt-4o-mini' } },
    channels: { telegram: { botToken: BOT, apiBaseUrl: tg.url } },
    hooks: { enabled: true, callbacks: { secret: SECRET, allowedOrigins: [receiver.url] } },
    ...(section ? { alerts: section } : {}),
  });
  const gw = await startTestGateway(configOf(alerts), {
    workers: true,
    alerts: { pollMs: 50 },
    ...options,
  });
  cleanup.push(() => gw.stop());
  return {
    gw,
    llm,
    tg,
    receiver,
    rewrite: (section) => {
      writeConfig(gw.dir, configOf(section));
    },
    age: (ms) => {
      const store = gw.config.store;
      if (store.driver !== 'sqlite') throw new Error('a SQLite store was expected');
      const db = new Database(store.path);
      try {
        db.pragma('busy_timeout = 5000');
        db.prepare(`UPDATE deliveries SET created_at = created_at - ? WHERE kind = 'alert'`).run(ms);
      } finally {
        db.close();
      }
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: a RunView whose fields each test asserts itself
async function settled(gw: TestGateway, runId: string): Promise<any> {
  return waitFor(async () => {
    const run = (await gw.admin(`/api/runs/${runId}`)).body;
    const done = run.finishedAt && run.delivery.status !== 'pending' && run.callback.status !== 'pending';
    return done ? run : undefined;
  }, `run ${runId} to settle`);
}

async function post(gw: TestGateway, body: Record<string, unknown> = {}): Promise<string> {
  const answer = await gw.hook('agent', {
    message: 'build 42',
    deliver: false,
    wakeMode: 'next-heartbeat',
    ...body,
  });
  expect(answer.status, answer.text).toBe(202);
  return answer.body.runId;
}

async function alertsTotal(gw: TestGateway): Promise<Record<string, number>> {
  const answer = await gw.admin('/metrics');
  return seriesOf(parseExposition(answer.text), 'agentgate_alerts_total');
}

const texts = (tg: FakeTelegram, chat: number) => tg.messagesFor(chat).map((m) => m.text);

describe('alerts through a gateway', () => {
  it("a failed run sends one alert with its runId, hook and the error's first line", async () => {
    const { gw, tg } = await rig({ channel: 'telegram', to: String(ALERT_CHAT) });
    const runId = await post(gw);
    const run = await settled(gw, runId);
    expect(run.status).toBe('failed');
    await waitFor(() => tg.messagesFor(ALERT_CHAT).length === 1, 'the alert message');
    const [text] = texts(tg, ALERT_CHAT);
    expect(text).toContain(runId);
    expect(text).toContain('hook:agent');
    expect(text).toContain('failed');
    expect(text).toContain('does not exist');
    expect(run.error).toContain('SECOND-LINE');
    expect(text).not.toContain('SECOND-LINE');
    await waitFor(async () => (await alertsTotal(gw))['status=sent'] === 1, 'the alert counted as sent');
    expect(await alertsTotal(gw)).toEqual({
      'status=queued': 1,
      'status=suppressed': 0,
      'status=summarized': 0,
      'status=sent': 1,
      'status=failed': 0,
    });
    // Not a reply: the operators' delivery list leaves the alert message out.
    expect((await gw.admin('/api/deliveries')).body.deliveries).toEqual([]);
    await sleep(300);
    expect(tg.messagesFor(ALERT_CHAT)).toHaveLength(1);
  });

  it('a reply that cannot be delivered sends one alert; a failed callback sends one', async () => {
    const { gw, tg, llm, receiver } = await rig({
      channel: 'telegram',
      to: String(ALERT_CHAT),
      on: ['delivery.failed', 'callback.failed'],
    });
    llm.setReply(() => 'the answer');
    // Telegram answers "chat not found" for an unknown chat: a permanent failure.
    const undeliverable = await post(gw, { deliver: true, channel: 'telegram', to: '999000' });
    const run = await settled(gw, undeliverable);
    expect(run.status).toBe('succeeded');
    expect(run.delivery.status).toBe('failed');
    await waitFor(() => tg.messagesFor(ALERT_CHAT).length === 1, 'the delivery alert');
    expect(texts(tg, ALERT_CHAT)[0]).toContain(undeliverable);
    expect(texts(tg, ALERT_CHAT)[0]).toMatch(/chat not found/);

    // 410 is not retried: the callback fails at once.
    receiver.answerNext({ status: 410 });
    const called = await post(gw, { callbackUrl: `${receiver.url}/done` });
    const withCallback = await settled(gw, called);
    expect(withCallback.callback.status).toBe('failed');
    await waitFor(() => tg.messagesFor(ALERT_CHAT).length === 2, 'the callback alert');
    const callbackAlert = texts(tg, ALERT_CHAT)[1] as string;
    expect(callbackAlert).toContain(called);
    expect(callbackAlert).toContain('callback');
    expect(callbackAlert).toContain('410');

    // run.failed is not in `on`: a failed run sends nothing.
    llm.setReply(badRequest);
    expect((await settled(gw, await post(gw))).status).toBe('failed');
    await sleep(300);
    expect(tg.messagesFor(ALERT_CHAT)).toHaveLength(2);
    expect((await alertsTotal(gw))['status=sent']).toBe(2);
  });

  it('an alert whose own delivery fails raises none', async () => {
    const { gw, tg } = await rig({ channel: 'telegram', to: String(BLOCKED_CHAT) });
    await settled(gw, await post(gw));
    await waitFor(async () => (await alertsTotal(gw))['status=failed'] === 1, 'the alert to fail');
    await sleep(300);
    const sends = tg.requests.filter((r) => r.method === 'POST');
    expect(sends).toHaveLength(1);
    expect(await alertsTotal(gw)).toMatchObject({
      'status=queued': 1,
      'status=failed': 0 + 1,
      'status=sent': 0,
    });
  });

  it('past maxPerHour the rest are counted, then summed up in one message when the hour ends', async () => {
    const { gw, tg, age } = await rig({ channel: 'telegram', to: String(ALERT_CHAT), maxPerHour: 2 });
    const runIds: string[] = [];
    for (let i = 0; i < 5; i++) runIds.push(await post(gw));
    for (const runId of runIds) expect((await settled(gw, runId)).status).toBe('failed');
    await waitFor(() => tg.messagesFor(ALERT_CHAT).length === 2, 'two alert messages');
    await sleep(300);
    expect(tg.messagesFor(ALERT_CHAT)).toHaveLength(2);
    expect(await alertsTotal(gw)).toMatchObject({ 'status=queued': 2, 'status=suppressed': 3 });

    age(HOUR + 1000);
    await waitFor(() => tg.messagesFor(ALERT_CHAT).length === 3, 'the summary');
    const summary = texts(tg, ALERT_CHAT)[2] as string;
    expect(summary).toContain('3 more failures in the last hour');
    expect(summary).toContain('3 run.failed');
    expect(summary).toContain('Failures view');
    await waitFor(async () => (await alertsTotal(gw))['status=sent'] === 3, 'the summary sent');
    expect(await alertsTotal(gw)).toEqual({
      'status=queued': 3,
      'status=suppressed': 3,
      'status=summarized': 3,
      'status=sent': 3,
      'status=failed': 0,
    });
    await sleep(300);
    expect(tg.messagesFor(ALERT_CHAT)).toHaveLength(3);
  });

  it('the alerts section is read at each failure: a config change turns them on and off without a restart', async () => {
    const { gw, tg, rewrite } = await rig(undefined);
    expect((await settled(gw, await post(gw))).status).toBe('failed');
    rewrite({ channel: 'telegram', to: String(ALERT_CHAT) });
    // Failing runs until the reload is in (the watcher debounces): from then on each queues one alert.
    await waitFor(async () => {
      await settled(gw, await post(gw));
      await sleep(100);
      return (await alertsTotal(gw))['status=queued'] === 1;
    }, 'the reloaded alerts section');
    await waitFor(() => tg.messagesFor(ALERT_CHAT).length === 1, 'the alert message');
    expect(texts(tg, ALERT_CHAT)[0]).toContain('failed');
    rewrite(undefined);
    await waitFor(async () => {
      const before = (await alertsTotal(gw))['status=queued'];
      await settled(gw, await post(gw));
      await sleep(100);
      return (await alertsTotal(gw))['status=queued'] === before;
    }, 'alerts off again');
    const queued = (await alertsTotal(gw))['status=queued'];
    expect((await settled(gw, await post(gw))).status).toBe('failed');
    await sleep(300);
    expect((await alertsTotal(gw))['status=queued']).toBe(queued);
  });

  it('alerts absent: a failure sends nothing and the series stay at 0', async () => {
    const { gw, tg } = await rig(undefined);
    expect((await settled(gw, await post(gw))).status).toBe('failed');
    await sleep(300);
    expect(tg.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    expect(Object.values(await alertsTotal(gw))).toEqual([0, 0, 0, 0, 0]);
  });
});
