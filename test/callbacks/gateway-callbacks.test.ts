/**
 * Completion callbacks through a real gateway over real HTTP (docs/callers.md,
 * "Completion callbacks"): a loopback receiver records what the gateway sends,
 * and the Standard Webhooks reference library verifies the signatures. The
 * callback engine runs on a manual clock, so retry waits are stepped through
 * instead of slept.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import type { ListenOptions } from '../../src/server/gateway.js';
import { type CallbackReceiver, startCallbackReceiver } from '../fakes/callback-receiver.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { type StartOptions, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

interface Rig {
  gw: TestGateway;
  receiver: CallbackReceiver;
  clock: ManualClock;
  /** Moves the callback clock past real time (runs finish on the real clock), so what is due is claimed. */
  catchUp(): Promise<void>;
  // biome-ignore lint/suspicious/noExplicitAny: a RunView whose fields each test asserts itself
  runView(runId: string): Promise<any>;
  post(body: Record<string, unknown>): Promise<string>;
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function rig(
  override: (receiver: CallbackReceiver) => Record<string, unknown> = () => ({}),
  options: StartOptions & { callbacks?: ListenOptions['callbacks'] } = {},
): Promise<Rig> {
  const receiver = await startCallbackReceiver();
  cleanup.push(() => receiver.close());
  const clock = new ManualClock(Date.now());
  const extra = override(receiver);
  const gw = await startTestGateway(
    {
      ...extra,
      hooks: {
        enabled: true,
        callbacks: { secret: SECRET, allowedOrigins: [receiver.url] },
        ...((extra.hooks as Record<string, unknown>) ?? {}),
      },
    },
    { workers: true, ...options, callbacks: { clock, random: () => 0, ...options.callbacks } },
  );
  cleanup.push(() => gw.stop());
  const runView = async (runId: string) => {
    const answer = await gw.admin(`/api/runs/${runId}`);
    expect(answer.status).toBe(200);
    return answer.body;
  };
  return {
    gw,
    receiver,
    clock,
    runView,
    catchUp: () => clock.advance(Math.max(0, Date.now() - clock.now()) + 1000),
    async post(body) {
      const answer = await gw.hook('agent', { message: 'build 42 failed', deliver: false, ...body });
      expect(answer.status, answer.text).toBe(202);
      const runId = answer.body.runId as string;
      await waitFor(async () => (await runView(runId)).finishedAt, `run ${runId} to finish`);
      return runId;
    },
  };
}

/** Steps the clock until the receiver has `count` requests. */
async function received(r: Rig, count: number): Promise<void> {
  await waitFor(
    async () => {
      if (r.receiver.received.length >= count) return true;
      await r.catchUp();
      return false;
    },
    `${count} callback request(s)`,
    15_000,
    50,
  );
}

describe('completion callbacks', () => {
  it('POSTs the run.finished body, signed per Standard Webhooks, and RunView shows it delivered', async () => {
    const r = await rig();
    const runId = await r.post({ callbackUrl: `${r.receiver.url}/ci/done?build=42` });
    await received(r, 1);
    const [request] = r.receiver.received;
    expect(request?.path).toBe('/ci/done?build=42');
    expect(request?.headers['content-type']).toBe('application/json');
    // The reference library accepts it (id, timestamp within its 5 minutes, v1 HMAC).
    const verified = new Webhook(SECRET).verify(request?.raw as string, {
      'webhook-id': request?.headers['webhook-id'] as string,
      'webhook-timestamp': request?.headers['webhook-timestamp'] as string,
      'webhook-signature': request?.headers['webhook-signature'] as string,
    });
    expect(verified).toEqual(request?.json);
    const run = await r.runView(runId);
    expect(request?.json).toEqual({
      type: 'run.finished',
      runId,
      status: 'succeeded',
      reply: run.reply,
      error: null,
      delivery: { status: 'none', channel: null, to: null, reason: null },
      finishedAt: run.finishedAt,
      attachments: [],
    });
    expect(Object.keys(request?.json)).toEqual([
      'type',
      'runId',
      'status',
      'reply',
      'error',
      'delivery',
      'finishedAt',
      'attachments',
    ]);
    await waitFor(async () => (await r.runView(runId)).callback.status === 'delivered', 'callback recorded');
    expect((await r.runView(runId)).callback).toEqual({ status: 'delivered', attempts: 1 });
    const metrics = await r.gw.admin('/metrics');
    expect(metrics.text).toMatch(/agentgate_callbacks_total\{status="delivered"\} 1/);
  });

  it('a run without callbackUrl shows callback "none"; with one it is "pending" from its acceptance', async () => {
    const r = await rig(() => ({}), { workers: false });
    const plain = await r.gw.hook('agent', { message: 'no callback' });
    expect((await r.runView(plain.body.runId)).callback).toEqual({ status: 'none', attempts: 0 });
    const withCallback = await r.gw.hook('agent', { message: 'x', callbackUrl: `${r.receiver.url}/cb` });
    expect(withCallback.status).toBe(202);
    expect((await r.runView(withCallback.body.runId)).callback).toEqual({ status: 'pending', attempts: 0 });
  });

  it('retries a 503 within 30 s with the same webhook-id, each attempt signed anew', async () => {
    const r = await rig();
    r.receiver.answerNext({ status: 503 });
    const runId = await r.post({ callbackUrl: `${r.receiver.url}/cb` });
    await received(r, 1);
    await waitFor(
      async () => (await r.runView(runId)).callback.attempts === 1,
      'the failed attempt recorded',
    );
    expect((await r.runView(runId)).callback).toEqual({ status: 'pending', attempts: 1 });
    // The first retry is 5 s later (no jitter here): not before.
    await r.clock.advance(4500);
    expect(r.receiver.received).toHaveLength(1);
    await r.clock.advance(600);
    await waitFor(() => r.receiver.received.length === 2, 'the retry');
    const [first, second] = r.receiver.received;
    expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
    expect(second?.raw).toBe(first?.raw);
    const wh = new Webhook(SECRET);
    for (const request of [first, second]) {
      expect(() =>
        wh.verify(request?.raw as string, request?.headers as unknown as Record<string, string>),
      ).not.toThrow();
    }
    await waitFor(async () => (await r.runView(runId)).callback.status === 'delivered', 'delivered');
    expect((await r.runView(runId)).callback).toEqual({ status: 'delivered', attempts: 2 });
  });

  it("honours a 429's Retry-After, even past the schedule's own wait", async () => {
    const r = await rig();
    r.receiver.answerNext({ status: 429, headers: { 'retry-after': '120' } });
    const runId = await r.post({ callbackUrl: `${r.receiver.url}/cb` });
    await received(r, 1);
    await waitFor(async () => (await r.runView(runId)).callback.attempts === 1, 'the 429 recorded');
    await r.clock.advance(60_000);
    expect(r.receiver.received).toHaveLength(1);
    await r.clock.advance(61_000);
    await waitFor(() => r.receiver.received.length === 2, 'the retry after Retry-After');
    await waitFor(async () => (await r.runView(runId)).callback.status === 'delivered', 'delivered');
    expect((await r.runView(runId)).callback).toEqual({ status: 'delivered', attempts: 2 });
  });

  it('a permanent 4xx ends it as failed, with no retry', async () => {
    const r = await rig();
    r.receiver.answerNext({ status: 404 });
    const runId = await r.post({ callbackUrl: `${r.receiver.url}/gone` });
    await received(r, 1);
    await waitFor(async () => (await r.runView(runId)).callback.status === 'failed', 'failed');
    await r.clock.advance(3600_000);
    expect(r.receiver.received).toHaveLength(1);
    expect((await r.runView(runId)).callback).toEqual({ status: 'failed', attempts: 1 });
    expect((await r.gw.admin('/metrics')).text).toMatch(/agentgate_callbacks_total\{status="failed"\} 1/);
  });

  it('keeps retrying 5xx answers for at least 24 h, then gives up', async () => {
    const r = await rig(() => ({}), { callbacks: { pollMs: 3600_000 } });
    r.receiver.answerNext(...Array.from({ length: 20 }, () => ({ status: 500 })));
    const runId = await r.post({ callbackUrl: `${r.receiver.url}/down` });
    await r.clock.advance(Math.max(0, Date.now() - r.clock.now()) + 3600_000);
    await waitFor(() => r.receiver.received.length === 1, 'the first attempt');
    // Step an hour at a time; attempts due meanwhile happen (real I/O completes while the clock steps).
    for (let step = 0; step < 60; step++) {
      if ((await r.runView(runId)).callback.status === 'failed') break;
      await r.clock.advance(3600_000);
      await waitFor(
        async () => (await r.runView(runId)).callback.attempts === r.receiver.received.length,
        'the attempts made so far recorded',
      );
    }
    const stamps = r.receiver.received.map((request) => Number(request.headers['webhook-timestamp']));
    expect(stamps).toHaveLength(15);
    // The first three retries each within 30 s of the attempt before; the last one 24 h or more after the first.
    for (let i = 1; i <= 3; i++)
      expect((stamps[i] as number) - (stamps[i - 1] as number)).toBeLessThanOrEqual(30);
    expect((stamps[14] as number) - (stamps[0] as number)).toBeGreaterThanOrEqual(24 * 3600);
    expect(new Set(r.receiver.received.map((request) => request.headers['webhook-id'])).size).toBe(1);
    expect((await r.runView(runId)).callback).toEqual({ status: 'failed', attempts: 15 });
  });

  it('a failed run calls back too, with its error and a null reply', async () => {
    const fixture = fileURLToPath(new URL('../fixtures/agent-fail.mjs', import.meta.url));
    const r = await rig(() => ({
      models: { providers: { failing: { api: 'command', command: [process.execPath, fixture] } } },
      agents: { defaults: { model: 'failing/agent' } },
    }));
    const runId = await r.post({ callbackUrl: `${r.receiver.url}/cb` });
    await received(r, 1);
    const body = r.receiver.received[0]?.json;
    expect(body).toMatchObject({ type: 'run.finished', runId, status: 'failed', reply: null });
    expect(body.error).toEqual((await r.runView(runId)).error);
    expect(body.error).toEqual(expect.any(String));
  });

  it('waits for the delivery to settle, so the body carries its final delivery status', async () => {
    const telegram = await startFakeTelegram({ token: '123:abc', chats: [4242] });
    cleanup.push(() => telegram.close());
    const r = await rig(() => ({
      channels: { telegram: { botToken: '123:abc', apiBaseUrl: telegram.url } },
    }));
    // No heartbeat after the run (`wakeMode: "now"` is the default): its reply would go to the
    // same chat, as the last route, at a moment no test can pin down.
    const runId = await r.post({
      callbackUrl: `${r.receiver.url}/cb`,
      deliver: true,
      channel: 'telegram',
      to: '4242',
      wakeMode: 'next-heartbeat',
    });
    await received(r, 1);
    expect(telegram.messages).toHaveLength(1);
    expect(r.receiver.received[0]?.json.delivery).toEqual({
      status: 'delivered',
      channel: 'telegram',
      to: '4242',
      reason: null,
    });
    expect((await r.runView(runId)).delivery.status).toBe('delivered');
  });
});
