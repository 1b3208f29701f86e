/**
 * GET /metrics over real HTTP (docs/operating.md, "Metrics"): the admin token
 * guard, the exposition format (read by a strict parser), and the exact series
 * after known traffic — hook answers by hook and code, runs, deliveries,
 * heartbeats, auth failures and lockouts, and the store-read gauges.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { ADMIN_TOKEN, HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { type Family, parseExposition, sampleValue, seriesOf } from './exposition.js';

const MAPPINGS = [
  // The label is the mapping's id, not its path.
  { id: 'deploys', match: { path: 'deploy' }, action: 'wake', textTemplate: 'Deployed {{service}}' },
];

async function scrape(gw: TestGateway, token: string | null = ADMIN_TOKEN) {
  const response = await fetch(`${gw.url}/metrics`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    text: await response.text(),
  };
}

async function metrics(gw: TestGateway): Promise<Map<string, Family>> {
  const answer = await scrape(gw);
  expect(answer.status).toBe(200);
  return parseExposition(answer.text);
}

describe('GET /metrics', () => {
  let gw: TestGateway;
  afterEach(async () => {
    await gw?.stop();
  });

  it('answers 401 without the admin token, and with the hook token; counts both as auth failures', async () => {
    gw = await startTestGateway();
    const none = await scrape(gw, null);
    expect(none.status).toBe(401);
    expect(JSON.parse(none.text)).toMatchObject({ ok: false, code: 'unauthorized' });
    expect((await scrape(gw, HOOK_TOKEN)).status).toBe(401);
    const ok = await scrape(gw);
    expect(ok.status).toBe(200);
    expect(ok.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(sampleValue(parseExposition(ok.text), 'agentgate_auth_failures_total')).toBe(2);
  });

  it('names every documented metric with its type, and the process defaults', async () => {
    gw = await startTestGateway();
    const families = await metrics(gw);
    const types = Object.fromEntries([...families.values()].map((f) => [f.name, f.type]));
    expect(types).toMatchObject({
      agentgate_hook_requests_total: 'counter',
      agentgate_hook_request_duration_seconds: 'histogram',
      agentgate_runs_finished_total: 'counter',
      agentgate_runs_deferred_total: 'counter',
      agentgate_run_duration_seconds: 'histogram',
      agentgate_runs_queued: 'gauge',
      agentgate_runs_running: 'gauge',
      agentgate_deliveries_total: 'counter',
      agentgate_deliveries_pending: 'gauge',
      agentgate_heartbeats_total: 'counter',
      agentgate_auth_failures_total: 'counter',
      agentgate_auth_lockouts_total: 'counter',
      agentgate_callbacks_total: 'counter',
      agentgate_store_pruned_total: 'counter',
      agentgate_model_tokens_total: 'counter',
      agentgate_model_cost_usd_total: 'counter',
      // Node process defaults (prom-client's collectDefaultMetrics).
      process_cpu_user_seconds_total: 'counter',
      process_resident_memory_bytes: 'gauge',
      nodejs_eventloop_lag_seconds: 'gauge',
      nodejs_heap_size_used_bytes: 'gauge',
    });
    // Fixed label sets start at 0, before anything happened.
    expect(seriesOf(families, 'agentgate_runs_finished_total')).toEqual({
      'status=succeeded': 0,
      'status=failed': 0,
      'status=timed_out': 0,
    });
    expect(seriesOf(families, 'agentgate_heartbeats_total')).toEqual({
      'status=succeeded': 0,
      'status=failed': 0,
    });
    expect(seriesOf(families, 'agentgate_callbacks_total')).toEqual({
      'status=delivered': 0,
      'status=failed': 0,
    });
    expect(seriesOf(families, 'agentgate_store_pruned_total')).toEqual({ 'kind=runs': 0, 'kind=events': 0 });
    expect(sampleValue(families, 'agentgate_runs_queued')).toBe(0);
  });

  it('counts hook answers by hook (wake, agent, mapping id, unknown) and code, rejected ones included', async () => {
    gw = await startTestGateway({ hooks: { mappings: MAPPINGS } });
    expect((await gw.hook('wake', { text: 'hello' })).status).toBe(200);
    expect((await gw.hook('agent', { message: 'do it' })).status).toBe(202);
    expect((await gw.hook('agent', { message: 'again' })).status).toBe(202);
    expect((await gw.hook('deploy', { service: 'api' })).status).toBe(200);
    expect((await gw.hook('nope', { text: 'x' })).status).toBe(404);
    expect(
      (await gw.hook('wake', { text: 'x' }, { authorization: 'Bearer wrong-token-wrong-token' })).status,
    ).toBe(401);
    expect((await gw.hook('agent', { message: 42 })).status).toBe(400);
    expect((await gw.hook('agent', '[not json')).status).toBe(400);

    const families = await metrics(gw);
    expect(seriesOf(families, 'agentgate_hook_requests_total')).toEqual({
      'hook=wake,code=200,token=default': 1,
      'hook=agent,code=202,token=default': 2,
      'hook=deploys,code=200,token=default': 1,
      'hook=unknown,code=404,token=default': 1,
      'hook=wake,code=401,token=none': 1,
      'hook=agent,code=400,token=default': 2,
    });
    expect(seriesOf(families, 'agentgate_hook_request_duration_seconds_count')).toEqual({
      'hook=wake': 2,
      'hook=agent': 4,
      'hook=deploys': 1,
      'hook=unknown': 1,
    });
    const sum = sampleValue(families, 'agentgate_hook_request_duration_seconds_sum', {
      hook: 'agent',
    }) as number;
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(60);
    const inf = sampleValue(families, 'agentgate_hook_request_duration_seconds_bucket', {
      hook: 'agent',
      le: '+Inf',
    });
    expect(inf).toBe(4);
    expect(sampleValue(families, 'agentgate_auth_failures_total')).toBe(1);
    // Workers are off: the two accepted runs wait in the store.
    expect(sampleValue(families, 'agentgate_runs_queued')).toBe(2);
    expect(sampleValue(families, 'agentgate_runs_running')).toBe(0);
    expect(sampleValue(families, 'agentgate_deliveries_pending')).toBe(0);
  });

  it('counts the closing answers written past Fastify (413 over the body limit)', async () => {
    gw = await startTestGateway({ hooks: { maxBodyBytes: 1024 } });
    expect((await gw.hook('agent', { message: 'x'.repeat(4096) })).status).toBe(413);
    expect(seriesOf(await metrics(gw), 'agentgate_hook_requests_total')).toEqual({
      'hook=agent,code=413,token=default': 1,
    });
  });

  it('counts a lockout once, and the failures that led to it', async () => {
    gw = await startTestGateway();
    const wrong = { authorization: 'Bearer wrong-token-wrong-token' };
    for (let i = 0; i < 20; i++) expect((await gw.hook('wake', { text: 'x' }, wrong)).status).toBe(401);
    expect((await gw.hook('wake', { text: 'x' }, wrong)).status).toBe(429);
    // The scrape comes from the locked address too: /metrics shares the lockout (it answers 429).
    expect((await scrape(gw)).status).toBe(429);
    const text = gw.gateway.metrics.exposition();
    const families = parseExposition(await text);
    expect(sampleValue(families, 'agentgate_auth_failures_total')).toBe(20);
    expect(sampleValue(families, 'agentgate_auth_lockouts_total')).toBe(1);
    expect(seriesOf(families, 'agentgate_hook_requests_total')).toEqual({
      'hook=wake,code=401,token=none': 20,
      'hook=wake,code=429,token=none': 1,
    });
  });

  it('keeps two gateways in one process apart', async () => {
    gw = await startTestGateway();
    const other = await startTestGateway();
    try {
      await gw.hook('wake', { text: 'one' });
      await other.hook('agent', { message: 'two' });
      expect(seriesOf(await metrics(gw), 'agentgate_hook_requests_total')).toEqual({
        'hook=wake,code=200,token=default': 1,
      });
      expect(seriesOf(await metrics(other), 'agentgate_hook_requests_total')).toEqual({
        'hook=agent,code=202,token=default': 1,
      });
    } finally {
      await other.stop();
    }
  });
});

describe('GET /metrics with the workers running', () => {
  const BOT = '777:metrics-test-token';
  const CHAT = 4242;
  let llm: FakeOpenAi;
  let telegram: FakeTelegram;
  let gw: TestGateway;

  beforeAll(async () => {
    llm = await startFakeOpenAi({ apiKey: 'sk-metrics-test' });
    telegram = await startFakeTelegram({ token: BOT, chats: [CHAT] });
    gw = await startTestGateway(
      {
        models: {
          providers: {
            fake: {
              api: 'openai-chat',
              baseUrl: llm.baseUrl,
              apiKey: 'sk-metrics-test',
              // USD per million tokens (docs/usage.md): each call of 10 in and 5 out costs $0.00002.
              prices: { 'gpt-test': { input: 1, output: 2 } },
            },
          },
        },
        agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
        channels: { telegram: { botToken: BOT, apiBaseUrl: telegram.url } },
      },
      { workers: true },
    );
  });
  afterAll(async () => {
    await gw?.stop();
    await telegram?.close();
    await llm?.close();
  });

  const settled = (runId: string) =>
    waitFor(
      async () => {
        const run = (await gw.admin(`/api/runs/${runId}`)).body;
        return run.status !== 'queued' && run.status !== 'running' && run.delivery.status !== 'pending'
          ? run
          : undefined;
      },
      `run ${runId} settled`,
      20_000,
    );

  it('counts finished runs by status with their durations, deliveries by channel, and heartbeats', async () => {
    llm.setReply((body) => {
      const last = String(body.messages.at(-1)?.content ?? '');
      // The heartbeat only acknowledges: nothing more to deliver.
      if (last.includes('look around')) return 'HEARTBEAT_OK';
      if (last.includes('please fail')) return { status: 400, error: 'bad request from the fake' };
      return 'all good';
    });
    const ok = await gw.hook('agent', {
      message: 'report',
      channel: 'telegram',
      to: String(CHAT),
      wakeMode: 'next-heartbeat',
    });
    const unreachable = await gw.hook('agent', {
      message: 'report',
      channel: 'telegram',
      to: '999000', // the fake answers "chat not found": a permanent failure
      wakeMode: 'next-heartbeat',
    });
    const failing = await gw.hook('agent', { message: 'please fail', wakeMode: 'next-heartbeat' });
    expect((await settled(ok.body.runId)).delivery.status).toBe('delivered');
    expect((await settled(unreachable.body.runId)).delivery.status).toBe('failed');
    expect((await settled(failing.body.runId)).status).toBe('failed');

    // A wake asking for a heartbeat now: one heartbeat turn (it sees the runs' summaries too).
    expect((await gw.hook('wake', { text: 'look around', mode: 'now' })).status).toBe(200);
    await waitFor(
      async () =>
        (await gw.admin('/api/sessions/agent:main:main/heartbeats')).body.heartbeats.length >= 1 || undefined,
      'a heartbeat',
      20_000,
    );

    const families = await waitFor(async () => {
      const current = await metrics(gw);
      return sampleValue(current, 'agentgate_heartbeats_total', { status: 'succeeded' }) === 1
        ? current
        : undefined;
    }, 'the heartbeat counted');
    expect(seriesOf(families, 'agentgate_runs_finished_total')).toEqual({
      'status=succeeded': 2,
      'status=failed': 1,
      'status=timed_out': 0,
    });
    expect(seriesOf(families, 'agentgate_run_duration_seconds_count')).toEqual({
      'status=succeeded': 2,
      'status=failed': 1,
      'status=timed_out': 0,
    });
    expect(
      sampleValue(families, 'agentgate_run_duration_seconds_sum', { status: 'succeeded' }),
    ).toBeGreaterThan(0);
    expect(seriesOf(families, 'agentgate_deliveries_total')).toEqual({
      'channel=telegram,status=delivered': 1,
      'channel=telegram,status=failed': 1,
    });
    expect(sampleValue(families, 'agentgate_heartbeats_total', { status: 'failed' })).toBe(0);
    expect(sampleValue(families, 'agentgate_runs_queued')).toBe(0);
    expect(sampleValue(families, 'agentgate_runs_running')).toBe(0);
    expect(sampleValue(families, 'agentgate_deliveries_pending')).toBe(0);
    // Three model calls answered (two runs, the heartbeat), 10 tokens in and 5 out each; the failed one reported none.
    expect(seriesOf(families, 'agentgate_model_tokens_total')).toEqual({
      'provider=fake,model=gpt-test,kind=input': 30,
      'provider=fake,model=gpt-test,kind=output': 15,
      'provider=fake,model=gpt-test,kind=cache_read': 0,
      'provider=fake,model=gpt-test,kind=cache_write': 0,
    });
    expect(
      sampleValue(families, 'agentgate_model_cost_usd_total', { provider: 'fake', model: 'gpt-test' }),
    ).toBeCloseTo(0.00006, 12);
  });
});
