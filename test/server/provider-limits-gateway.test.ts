/**
 * Provider limits through the whole gateway (docs/agent-runs.md, "Provider limits"): a hook's
 * run whose provider (the loopback Anthropic fake, over real HTTP) answers 429 with a
 * Retry-After longer than the in-turn retries is put back in the queue — `queued` with
 * `notBefore` on `GET /api/runs/{id}`, shown by `agentgate runs show` — and counted in
 * `agentgate_runs_deferred_total{provider}`; the provider is called once. On SQLite and on
 * PostgreSQL.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { describeRun, type RunView } from '../../src/cli/commands/runs.js';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const STORES = PG_ENABLED ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;

let anthropic: FakeAnthropic;
let gw: TestGateway | undefined;
beforeAll(async () => {
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test' });
});
afterAll(() => anthropic.close());
afterEach(async () => {
  await gw?.stop();
  gw = undefined;
  await database?.drop();
  database = undefined;
});

describe.each(STORES)('a 429 that outlasts the retries, through the gateway on %s', (storeKind) => {
  it('puts the run back queued with notBefore on its RunView, and counts the deferral', async () => {
    anthropic.script([{ status: 429, error: 'rate limited', retryAfter: '300' }]);
    anthropic.requests.length = 0;
    if (storeKind === 'postgres') database = await createTestDatabase();
    gw = await startTestGateway(
      {
        ...(database ? { store: { driver: 'postgres', url: database.url } } : {}),
        models: {
          providers: {
            claude: {
              api: 'anthropic-messages',
              baseUrl: anthropic.url,
              apiKey: 'sk-ant-test',
              maxConcurrent: 2,
            },
          },
        },
        agents: { defaults: { model: 'claude/claude-sonnet-4-5' } },
      },
      { workers: true },
    );
    const before = Date.now();
    const answer = await gw.hook('agent', { message: 'summarise', deliver: false });
    expect(answer.status, answer.text).toBe(202);
    const runId = answer.body.runId as string;
    const view = await waitFor(
      async () => {
        const run = (await gw?.admin(`/api/runs/${runId}`))?.body;
        return run?.notBefore ? run : undefined;
      },
      'the run to be put back',
      10_000,
      20,
    );
    expect(view).toMatchObject({ status: 'queued', error: null, finishedAt: null });
    const notBefore = Date.parse(view.notBefore);
    expect(notBefore).toBeGreaterThanOrEqual(before + 300_000);
    expect(notBefore).toBeLessThanOrEqual(Date.now() + 300_000);
    expect(anthropic.requests).toHaveLength(1);
    expect(describeRun(view as RunView)).toMatch(/^not before: +\S+ \(in \d/m);

    const metrics = await gw.admin('/metrics');
    expect(metrics.text).toMatch(/^agentgate_runs_deferred_total\{provider="claude"\} 1$/m);
  });
});
