/**
 * A run's usage and cost (docs/usage.md), end to end through the worker against the loopback
 * fakes: a tool loop's RunView sums every model call, priced at `models.providers.<name>.prices`
 * (Anthropic's cache fields included); an unpriced model's cost is null; a failed run still
 * records its calls; a resumed loop counts the usage its earlier steps committed; each call is
 * counted in the metrics, with its cost when priced; a heartbeat records its usage.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ModelRouter } from '../../src/agents/models.js';
import type { ModelUsage } from '../../src/agents/providers/kit/usage.js';
import { RunWorker } from '../../src/agents/worker.js';
import { loadConfigFile } from '../../src/config/load.js';
import type { ResolvedConfig } from '../../src/config/resolved.js';
import { HeartbeatScheduler } from '../../src/heartbeat/scheduler.js';
import type { RunStep, StepsStore } from '../../src/store/contract/steps.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ToolSource } from '../../src/tools/types.js';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { NO_RETRY, queueEvent, queueRun, silentLog } from '../helpers/agent-rig.js';
import { tempDir, writeConfig } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { fakeToolSet } from './tools/fake-tool-set.js';

const OWNER = 'test-host:1:worker';

/** The steps contract in memory, for a run resumed with steps already committed. */
class MemorySteps implements StepsStore {
  readonly byRun = new Map<string, RunStep[]>();
  async list(runId: string) {
    return [...(this.byRun.get(runId) ?? [])];
  }
  async append(runId: string, _owner: string, step: RunStep) {
    const steps = this.byRun.get(runId) ?? [];
    if (!steps.some((s) => s.index === step.index)) steps.push(step);
    this.byRun.set(runId, steps);
    return true;
  }
}

interface Counted {
  provider: string;
  model: string;
  usage: ModelUsage;
  costUsd: number | null;
}

let openai: FakeOpenAi;
let anthropic: FakeAnthropic;
let dir: string;
let store: SqliteStore;
let worker: RunWorker | undefined;
let counted: Counted[];

beforeAll(async () => {
  openai = await startFakeOpenAi({ apiKey: 'sk-test', streamDelayMs: 1 });
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test', streamDelayMs: 1 });
});
afterAll(async () => {
  await openai.close();
  await anthropic.close();
});
afterEach(async () => {
  await worker?.stop(0);
  worker = undefined;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function configured(model: string): ResolvedConfig {
  dir = tempDir('agentgate-usage-');
  const configDir = join(dir, 'config');
  mkdirSync(configDir);
  const path = writeConfig(configDir, {
    models: {
      providers: {
        oai: {
          api: 'openai-chat',
          baseUrl: openai.baseUrl,
          apiKey: 'sk-test',
          prices: { 'gpt-5-mini': { input: 0.25, output: 2, cacheRead: 0.025 } },
        },
        claude: {
          api: 'anthropic-messages',
          baseUrl: anthropic.url,
          apiKey: 'sk-ant-test',
          prices: { 'claude-sonnet-4-5': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
        },
      },
    },
    tools: { servers: { repo: { transport: 'stdio', command: ['node', 'repo.js'] } } },
    agents: {
      defaults: { model, heartbeat: { every: '0' } },
      list: [{ id: 'main', default: true, tools: { allow: ['repo.*'], maxSteps: 3 } }],
    },
  });
  const loaded = loadConfigFile(path, process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  store = new SqliteStore({ path: join(dir, 'store.db'), synchronous: 'normal' });
  counted = [];
  return loaded.config;
}

const tools = (): ToolSource => {
  const set = fakeToolSet({ 'repo.get': { answer: () => ({ status: 'ok', text: 'PR 7' }) } });
  return {
    async forRun(agentTools) {
      return agentTools ? { ...set, maxSteps: agentTools.maxSteps } : undefined;
    },
    async close() {},
  };
};

const metrics = {
  runFinished() {},
  heartbeatFinished() {},
  modelCallUsage(provider: string, model: string, usage: ModelUsage, costUsd: number | null) {
    counted.push({ provider, model, usage, costUsd });
  },
};

async function start(config: ResolvedConfig, steps: StepsStore = store.steps) {
  worker = new RunWorker({
    store,
    config,
    models: new ModelRouter(config),
    log: silentLog,
    owner: OWNER,
    providerRetry: NO_RETRY,
    pollMs: 20,
    tools: tools(),
    steps,
    metrics,
  });
  await worker.start();
}

const finished = (runId: string) =>
  waitFor(
    async () => {
      const run = await store.getRun(runId);
      return run && run.status !== 'queued' && run.status !== 'running' ? run : undefined;
    },
    `run ${runId} to finish`,
    10_000,
    10,
  );

const callTool = { toolCalls: [{ name: 'repo__get', arguments: {} }] };

describe('usage of a run', () => {
  it('sums every model call of a tool loop, priced with its cache reads (openai-chat)', async () => {
    const config = configured('oai/gpt-5-mini');
    openai.script([
      { usage: { prompt: 1000, completion: 50, cached: 0 }, reply: callTool },
      { usage: { prompt: 1200, completion: 80, cached: 1000 }, reply: 'Reviewed PR 7.' },
    ]);
    await start(config);
    const run = await queueRun(store);
    const done = await finished(run.id);
    expect(done.status).toBe('succeeded');
    expect(done.usage).toMatchObject({
      inputTokens: 2200,
      outputTokens: 130,
      cacheReadTokens: 1000,
      cacheWriteTokens: 0,
    });
    // (2200 − 1000) × 0.25 + 1000 × 0.025 + 130 × 2, per million
    expect(done.usage.costUsd).toBeCloseTo((1200 * 0.25 + 1000 * 0.025 + 130 * 2) / 1e6, 12);
    expect(counted.map((c) => [c.provider, c.model, c.usage.inputTokens])).toEqual([
      ['oai', 'gpt-5-mini', 1000],
      ['oai', 'gpt-5-mini', 1200],
    ]);
    expect(counted[1]?.costUsd).toBeCloseTo((200 * 0.25 + 1000 * 0.025 + 80 * 2) / 1e6, 12);
    // Each model step keeps its own call's usage.
    const steps = await store.steps.list(run.id);
    expect(steps.flatMap((s) => (s.kind === 'model' ? [s.usage?.inputTokens] : []))).toEqual([1000, 1200]);
  });

  it('counts Anthropic cache reads and writes in the input, each at its price', async () => {
    const config = configured('claude/claude-sonnet-4-5');
    anthropic.script([
      {
        usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 4000 },
        reply: { toolUses: [{ name: 'repo__get', input: {} }] },
      },
      { usage: { input: 150, output: 60, cacheRead: 4000, cacheWrite: 0 }, reply: 'Done.' },
    ]);
    await start(config);
    const run = await queueRun(store);
    const done = await finished(run.id);
    expect(done.usage).toMatchObject({
      inputTokens: 8250,
      outputTokens: 80,
      cacheReadTokens: 4000,
      cacheWriteTokens: 4000,
    });
    expect(done.usage.costUsd).toBeCloseTo((250 * 3 + 4000 * 0.3 + 4000 * 3.75 + 80 * 15) / 1e6, 12);
  });

  it('a model without a price: tokens counted, costUsd null, no cost in the metrics', async () => {
    const config = configured('oai/gpt-unpriced');
    openai.script([{ usage: { prompt: 10, completion: 3 }, reply: 'hi' }]);
    await start(config);
    const done = await finished((await queueRun(store)).id);
    expect(done.usage).toEqual({
      inputTokens: 10,
      outputTokens: 3,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: null,
    });
    expect(counted).toEqual([
      {
        provider: 'oai',
        model: 'gpt-unpriced',
        usage: { inputTokens: 10, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0 },
        costUsd: null,
      },
    ]);
  });

  it('a failed run still records the calls it made', async () => {
    const config = configured('oai/gpt-5-mini');
    openai.script([{ usage: { prompt: 100, completion: 10 }, reply: callTool }]);
    await start(config);
    const done = await finished((await queueRun(store)).id);
    expect(done.status).toBe('failed');
    expect(done.usage).toMatchObject({ inputTokens: 300, outputTokens: 30 });
  });

  it('a resumed loop counts the usage its committed model steps kept', async () => {
    const config = configured('oai/gpt-5-mini');
    const steps = new MemorySteps();
    const run = await queueRun(store);
    steps.byRun.set(run.id, [
      {
        kind: 'model',
        index: 0,
        text: '',
        calls: [{ callId: 'call_0', tool: 'repo.get', arguments: {} }],
        status: 'ok',
        startedAt: 1,
        finishedAt: 2,
        usage: { inputTokens: 500, outputTokens: 25, cacheReadTokens: 0, cacheWriteTokens: 0 },
      },
    ]);
    openai.script([{ usage: { prompt: 700, completion: 40 }, reply: 'After the restart.' }]);
    await start(config, steps);
    const done = await finished(run.id);
    expect(done.reply).toBe('After the restart.');
    expect(done.usage).toMatchObject({ inputTokens: 1200, outputTokens: 65 });
    // The earlier attempt's call was counted by that attempt's process, not again.
    expect(counted.map((c) => c.usage.inputTokens)).toEqual([700]);
  });
});

describe('usage of a heartbeat', () => {
  it('records its model call usage with the heartbeat', async () => {
    const config = configured('claude/claude-sonnet-4-5');
    anthropic.script([{ usage: { input: 40, output: 5, cacheRead: 1000 }, reply: 'HEARTBEAT_OK' }]);
    const heartbeat = new HeartbeatScheduler({
      store,
      config,
      models: new ModelRouter(config),
      log: silentLog,
      providerRetry: NO_RETRY,
      metrics,
    });
    await queueEvent(store, 'something happened');
    await heartbeat.start();
    heartbeat.request('agent:main:main');
    try {
      const [beat] = await waitFor(
        async () => {
          const beats = await store.sessions.listHeartbeats('agent:main:main', 10);
          return beats.length > 0 ? beats : undefined;
        },
        'a heartbeat',
        10_000,
        10,
      );
      expect(beat?.usage).toMatchObject({ inputTokens: 1040, outputTokens: 5, cacheReadTokens: 1000 });
      expect(beat?.usage.costUsd).toBeCloseTo((40 * 3 + 1000 * 0.3 + 5 * 15) / 1e6, 12);
      expect(counted.map((c) => c.provider)).toEqual(['claude']);
    } finally {
      await heartbeat.stop(0);
    }
  });
});
