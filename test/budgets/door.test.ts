/**
 * Budgets through a running gateway over real HTTP (docs/budgets.md): a run's usage spends the
 * `agent` hook's daily token budget; from then on POST /hooks/agent is 429 `budget_exceeded`
 * with Retry-After (the seconds to the UTC day's end) and stores nothing, while a hook of
 * another scope is still accepted; GET /api/budgets shows the spend; one `budget.exceeded`
 * alert reaches the alert route, however many requests are refused; `agentgate budgets` lists them.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../fakes/openai.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function gatewayWithBudgets(): Promise<{ gw: TestGateway; alerts: () => string[] }> {
  // Every call reports 10 input and 5 output tokens: one run spends 15.
  const llm = await startFakeOpenAi({ apiKey: 'sk-test', usage: { prompt: 10, completion: 5 } });
  closers.push(() => llm.close());
  const tg = await startFakeTelegram({ token: '1:tg', chats: [4242] });
  closers.push(() => tg.close());
  const gw = await startTestGateway(
    {
      models: {
        providers: {
          oai: {
            api: 'openai-chat',
            baseUrl: llm.baseUrl,
            apiKey: 'sk-test',
            prices: { 'gpt-5-mini': { input: 0.25, output: 2 } },
          },
        },
      },
      agents: { defaults: { model: 'oai/gpt-5-mini', heartbeat: { every: '0' } } },
      channels: { telegram: { botToken: '1:tg', apiBaseUrl: tg.url } },
      alerts: { channel: 'telegram', to: '4242', on: ['budget.exceeded'] },
      budgets: [
        { id: 'agent-daily', hook: 'agent', perDay: { tokens: 15 } },
        { id: 'wake-hourly', hook: 'wake', perHour: { usd: 1 } },
      ],
    },
    { workers: true },
  );
  closers.push(() => gw.stop());
  return { gw, alerts: () => tg.messagesFor(4242).map((m) => m.text) };
}

describe('budgets at the door', () => {
  it('a spent budget refuses its scope with 429 and Retry-After, stores nothing, and alerts once', async () => {
    const { gw, alerts } = await gatewayWithBudgets();
    const first = await gw.hook('agent', { message: 'hello' });
    expect(first.status).toBe(202);
    await waitFor(
      async () => (await gw.admin(`/api/runs/${first.body.runId}`)).body.status === 'succeeded',
      'run',
    );

    const listed = await waitFor(async () => {
      const answer = await gw.admin('/api/budgets');
      return answer.body.budgets[0]?.exceeded ? answer : undefined;
    }, 'the budget exceeded');
    expect(listed.status).toBe(200);
    const [agentDaily, wakeHourly] = listed.body.budgets;
    expect(agentDaily).toMatchObject({
      id: 'agent-daily',
      window: 'day',
      limit: { tokens: 15 },
      spent: { tokens: 15 },
      exceeded: true,
    });
    expect(agentDaily.spent.usd).toBeCloseTo((10 * 0.25 + 5 * 2) / 1e6, 12);
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(agentDaily.resetsAt).toBe(midnight.toISOString());
    expect(wakeHourly).toMatchObject({
      id: 'wake-hourly',
      window: 'hour',
      exceeded: false,
      spent: { usd: 0 },
    });

    const before = (await gw.admin('/api/runs?limit=100')).body.runs.length;
    for (let i = 0; i < 3; i++) {
      const refused = await gw.hook('agent', { message: `over budget ${i}` });
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ ok: false, code: 'budget_exceeded' });
      expect(refused.body.error).toContain('agent-daily');
      const retryAfter = Number(refused.headers.get('retry-after'));
      const toMidnight = Math.ceil((midnight.getTime() - Date.now()) / 1000);
      expect(retryAfter).toBeGreaterThanOrEqual(toMidnight - 2);
      expect(retryAfter).toBeLessThanOrEqual(toMidnight + 2);
    }
    expect((await gw.admin('/api/runs?limit=100')).body.runs.length).toBe(before);

    // Another scope: the wake hook's budget is not spent.
    expect((await gw.hook('wake', { text: 'still welcome', mode: 'next-heartbeat' })).status).toBe(200);

    // One alert for the budget's window, whatever the number of refusals.
    await waitFor(() => alerts().length > 0, 'the budget alert');
    await sleep(300);
    expect(alerts()).toHaveLength(1);
    expect(alerts()[0]).toContain('budget agent-daily (hook:agent) is spent for this day');

    // `agentgate budgets` shows the same, as a table.
    const env = {
      AGENTGATE_CONFIG: '',
      AGENTGATE_HOME: '',
      HOME: join(gw.dir, 'home'),
      AGENTGATE_LOG_LEVEL: 'warn',
    };
    const listedByCli = await runCliInProcess(
      ['budgets', '--config', join(gw.dir, 'agentgate.json5'), '--url', gw.url],
      env,
    );
    expect(listedByCli.code, listedByCli.stderr).toBe(0);
    const lines = listedByCli.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^BUDGET +SCOPE +WINDOW +SPENT \/ LIMIT +RESETS +STATE$/);
    expect(lines[1]).toMatch(/^agent-daily +hook:agent +day +15 \/ 15 tokens +\S+ +spent$/);
    expect(lines[2]).toMatch(/^wake-hourly +hook:wake +hour +\$0\.\d+ \/ \$1\.00 +\S+ +ok$/);
    expect(listedByCli.stdout).not.toContain(ADMIN_TOKEN);
  });
});
