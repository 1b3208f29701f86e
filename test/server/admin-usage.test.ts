/**
 * `GET /api/usage` through the admin API (docs/usage.md): the runs that finished in the window,
 * summed per hook (the default), token, agent or model, the costliest first; the window as ISO
 * times or durations back from now (default the last 24 h); `bucket=hour|day` splits each group
 * by UTC hour or day, each row with its bucket's start `at`; a bad `by`, bucket or time is a 400; the
 * admin token only. Runs are accepted by real hooks with the worker off and completed through the
 * gateway's own store with their usage, so the figures are exact. Also the RunView's `usage` and
 * the route's OpenAPI entry. On SQLite and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunUsage } from '../../src/store/types.js';
import { HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectError, expectInvalidPayload } from '../ingress/support.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const STORES = PG_ENABLED ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.stop();
  gw = undefined;
  await database?.drop();
  database = undefined;
});

const usage = (model: string, inputTokens: number, costUsd: number | null): RunUsage => ({
  model,
  inputTokens,
  outputTokens: 10,
  cacheReadTokens: 5,
  cacheWriteTokens: 0,
  costUsd,
});

describe.each(STORES)('GET /api/usage on %s', (storeKind) => {
  async function start(): Promise<TestGateway> {
    if (storeKind === 'postgres') database = await createTestDatabase();
    gw = await startTestGateway(
      { store: database ? { driver: 'postgres', url: database.url } : undefined },
      { inject: true, workers: false },
    );
    return gw;
  }

  /** A run accepted by the hook `name`, claimed and completed `agoMs` ago with `used`. */
  async function finishedRun(
    g: TestGateway,
    used: RunUsage,
    agoMs = 60_000,
    name = 'agent',
  ): Promise<string> {
    const answer = await g.hook(name, { message: 'hello', deliver: false });
    expect(answer.status, answer.text).toBe(202);
    const runId = answer.body.runId as string;
    const now = Date.now();
    const [claimed] = await g.gateway.store.runs.claimRuns('w', now, 60_000, 1);
    expect(claimed?.id).toBe(runId);
    const finishedAt = now - agoMs;
    const recorded = await g.gateway.store.runs.completeRun({
      runId,
      owner: 'w',
      sessionKey: claimed?.sessionKey as string,
      status: 'succeeded',
      reply: 'ok',
      error: null,
      finishedAt,
      transcript: [],
      summary: {
        id: `evt_${runId}`,
        sessionKey: claimed?.mainSessionKey as string,
        text: 'done',
        source: `run:${runId}`,
        wakeMode: 'next-heartbeat',
        ts: finishedAt,
      },
      delivery: { status: 'none', channel: null, to: null, reason: null },
      usage: used,
    });
    expect(recorded).toBe(true);
    return runId;
  }

  it('sums the last 24 h per hook by default, the costliest first; the RunView shows its own usage', async () => {
    const g = await start();
    const first = await finishedRun(g, usage('claude/claude-sonnet-4-5', 1000, 0.5));
    await finishedRun(g, usage('oai/gpt-5-mini', 200, null));
    await finishedRun(g, usage('claude/claude-sonnet-4-5', 7000, 9), 3 * 86_400_000); // outside the window
    const answer = await g.admin('/api/usage');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      usage: [
        {
          key: 'hook:agent',
          runs: 2,
          inputTokens: 1200,
          outputTokens: 20,
          cacheReadTokens: 10,
          cacheWriteTokens: 0,
          costUsd: 0.5,
        },
      ],
    });
    const run = await g.admin(`/api/runs/${first}`);
    expect(run.body.usage).toEqual({
      inputTokens: 1000,
      outputTokens: 10,
      cacheReadTokens: 5,
      cacheWriteTokens: 0,
      costUsd: 0.5,
    });
  });

  it('groups by model, agent and token; takes ISO times and durations', async () => {
    const g = await start();
    await finishedRun(g, usage('claude/claude-sonnet-4-5', 1000, 0.5));
    await finishedRun(g, usage('oai/gpt-5-mini', 200, null));
    await finishedRun(g, usage('claude/claude-sonnet-4-5', 7000, 9), 3 * 86_400_000);
    const byModel = await g.admin('/api/usage?by=model&since=7d');
    expect(byModel.body.usage.map((u: { key: string; runs: number }) => [u.key, u.runs])).toEqual([
      ['claude/claude-sonnet-4-5', 2],
      ['oai/gpt-5-mini', 1],
    ]);
    expect(byModel.body.usage[0].costUsd).toBe(9.5);
    expect(byModel.body.usage[1].costUsd).toBeNull();
    const byAgent = await g.admin('/api/usage?by=agent&since=7d');
    expect(byAgent.body.usage).toMatchObject([{ key: 'main', runs: 3, inputTokens: 8200 }]);
    const byToken = await g.admin('/api/usage?by=tokenId');
    expect(byToken.body.usage).toMatchObject([{ key: 'default', runs: 2 }]);
    const since = new Date(Date.now() - 4 * 86_400_000).toISOString();
    const until = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const window = await g.admin(`/api/usage?since=${since}&until=${until}`);
    expect(window.body.usage).toMatchObject([{ key: 'hook:agent', runs: 1, costUsd: 9 }]);
    expect((await g.admin('/api/usage?since=1h&until=30m')).body).toEqual({ usage: [] });
  });

  it('with bucket=hour or day, splits each group by the UTC hour or day its runs finished in', async () => {
    const g = await start();
    const HOUR = 3_600_000;
    const DAY = 24 * HOUR;
    const recent = await finishedRun(g, usage('claude/claude-sonnet-4-5', 1000, 0.5), 60_000);
    const old = await finishedRun(g, usage('claude/claude-sonnet-4-5', 7000, 9), 3 * DAY);
    /** The start of the UTC hour or day the run finished in, from its own finish time. */
    const bucketOf = async (runId: string, length: number) => {
      const at = Date.parse((await g.admin(`/api/runs/${runId}`)).body.finishedAt);
      return new Date(at - (at % length)).toISOString();
    };
    const daily = await g.admin('/api/usage?since=7d&bucket=day');
    expect(daily.status, daily.text).toBe(200);
    expect(daily.body.usage).toEqual([
      {
        key: 'hook:agent',
        at: await bucketOf(old, DAY),
        runs: 1,
        inputTokens: 7000,
        outputTokens: 10,
        cacheReadTokens: 5,
        cacheWriteTokens: 0,
        costUsd: 9,
      },
      expect.objectContaining({ key: 'hook:agent', at: await bucketOf(recent, DAY), runs: 1, costUsd: 0.5 }),
    ]);
    const hourly = await g.admin('/api/usage?bucket=hour&by=model');
    expect(hourly.body.usage).toMatchObject([
      { key: 'claude/claude-sonnet-4-5', at: await bucketOf(recent, HOUR), runs: 1, inputTokens: 1000 },
    ]);
    // Without a bucket, as before: one row per group, no `at`.
    expect((await g.admin('/api/usage?since=7d')).body.usage).toEqual([
      expect.not.objectContaining({ at: expect.anything() }),
    ]);
    expectInvalidPayload(await g.admin('/api/usage?bucket=week'), 'bucket');
  });

  it('refuses a bad by, a bad time, an empty window, and the hook token', async () => {
    const g = await start();
    expectInvalidPayload(await g.admin('/api/usage?by=colour'), 'by');
    expectInvalidPayload(await g.admin('/api/usage?since=yesterday'), 'since');
    expectInvalidPayload(await g.admin('/api/usage?since=1h&until=2h'), 'until');
    expectError(await g.admin('/api/usage', { authorization: `Bearer ${HOOK_TOKEN}` }), 401, 'unauthorized');
  });
});

it('the OpenAPI document describes GET /api/usage, and the RunView and heartbeats carry usage', async () => {
  gw = await startTestGateway({}, { inject: true, workers: false });
  const doc = (await gw.admin('/api/openapi.json')).body;
  const route = doc.paths['/api/usage'].get;
  expect(route.tags).toEqual(['usage']);
  expect(route.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
    'bucket',
    'by',
    'since',
    'until',
  ]);
  const answer = route.responses['200'].content['application/json'].schema;
  expect(JSON.stringify(answer)).toContain('cacheWriteTokens');
  expect(answer.properties.usage.items.properties.at.type).toBe('string');
  const bucket = route.parameters.find((p: { name: string }) => p.name === 'bucket');
  expect(bucket.required).toBe(false);
  expect(bucket.schema.enum).toEqual(['hour', 'day']);
  const run = doc.paths['/api/runs/{runId}'].get.responses['200'].content['application/json'].schema;
  expect(JSON.stringify(run)).toContain('costUsd');
  const beats =
    doc.paths['/api/sessions/{sessionKey}/heartbeats'].get.responses['200'].content['application/json'];
  expect(JSON.stringify(beats.schema)).toContain('costUsd');
});
