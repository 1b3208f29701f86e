/**
 * The worker's part in tools (src/agents/worker.ts, run-tools.ts): a run of an agent with
 * `tools` asks the ToolSource for its set — narrowed by its mapping's `tools` — runs the
 * loop against the loopback OpenAI fake, commits its steps, and, resumed with steps
 * already committed, does not call a finished tool again.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ModelRouter } from '../../../src/agents/models.js';
import { RunWorker } from '../../../src/agents/worker.js';
import { loadConfigFile } from '../../../src/config/load.js';
import type { ResolvedConfig } from '../../../src/config/resolved.js';
import type { RunStep, StepsStore } from '../../../src/store/contract/steps.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import type { AgentToolsConfig } from '../../../src/tools/config.js';
import type { ToolSource } from '../../../src/tools/types.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../fakes/openai.js';
import { NO_RETRY, queueRun, silentLog } from '../../helpers/agent-rig.js';
import { tempDir, writeConfig } from '../../helpers/gateway.js';
import { waitFor } from '../../helpers/wait.js';
import { type FakeToolSet, fakeToolSet } from './fake-tool-set.js';

const OWNER = 'test-host:1:worker';

/** The steps contract in memory: what the store part keeps, by run. */
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

class RecordingToolSource implements ToolSource {
  readonly asked: { agentTools: AgentToolsConfig | undefined; mappingTools?: readonly string[] }[] = [];
  constructor(readonly set: FakeToolSet) {}
  async forRun(agentTools: AgentToolsConfig | undefined, mappingTools?: readonly string[]) {
    this.asked.push({ agentTools, ...(mappingTools ? { mappingTools } : {}) });
    // As the real source does: the agent's maxSteps bounds the loop.
    return agentTools ? { ...this.set, maxSteps: agentTools.maxSteps } : undefined;
  }
  async close() {}
}

let llm: FakeOpenAi;
let dir: string;
let store: SqliteStore;
let worker: RunWorker | undefined;

beforeAll(async () => {
  llm = await startFakeOpenAi({ apiKey: 'sk-test' });
});
afterAll(() => llm.close());
afterEach(async () => {
  await worker?.stop(0);
  worker = undefined;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  llm.requests.length = 0;
});

function configured(): ResolvedConfig {
  dir = tempDir('agentgate-worker-tools-');
  const configDir = join(dir, 'config');
  mkdirSync(configDir);
  const path = writeConfig(configDir, {
    models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
    tools: { servers: { repo: { transport: 'stdio', command: ['node', 'repo.js'] } } },
    agents: {
      defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } },
      list: [{ id: 'main', default: true, tools: { allow: ['repo.*'], maxSteps: 4 } }],
    },
    hooks: {
      mappings: [
        {
          id: 'github',
          match: { path: 'github' },
          messageTemplate: 'PR {{payload.n}}',
          tools: ['repo.get_pull_request'],
        },
      ],
    },
  });
  const loaded = loadConfigFile(path, process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  store = new SqliteStore({ path: join(dir, 'store.db'), synchronous: 'normal' });
  return loaded.config;
}

async function start(config: ResolvedConfig, tools: ToolSource, steps: StepsStore) {
  worker = new RunWorker({
    store,
    config,
    models: new ModelRouter(config),
    log: silentLog,
    owner: OWNER,
    providerRetry: NO_RETRY,
    pollMs: 20,
    tools,
    steps,
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

const repo = () =>
  fakeToolSet({
    'repo.get_pull_request': { answer: (args) => ({ status: 'ok', text: `PR ${String(args.number)}` }) },
  });

describe('the worker with tools', () => {
  it("asks for the run's tools narrowed by its mapping, runs the loop and commits its steps", async () => {
    const config = configured();
    const set = repo();
    const source = new RecordingToolSource(set);
    const steps = new MemorySteps();
    llm.script([
      { toolCalls: [{ id: 'call_1', name: 'repo__get_pull_request', arguments: { number: 7 } }] },
      'Reviewed PR 7.',
    ]);
    await start(config, source, steps);
    const run = await queueRun(store, { source: 'hook:github', message: 'PR 7' });

    const done = await finished(run.id);
    expect(done.status).toBe('succeeded');
    expect(done.reply).toBe('Reviewed PR 7.');
    expect(source.asked).toEqual([
      {
        agentTools: { allow: ['repo.*'], approval: [], maxSteps: 4 },
        mappingTools: ['repo.get_pull_request'],
      },
    ]);
    expect(set.calls).toEqual([{ name: 'repo.get_pull_request', arguments: { number: 7 } }]);
    expect(steps.byRun.get(run.id)?.map((s) => `${s.index}:${s.kind}`)).toEqual([
      '0:model',
      '1:tool',
      '2:model',
    ]);
  });

  it('resumed with a finished tool step committed, does not call that tool again', async () => {
    const config = configured();
    const set = repo();
    const steps = new MemorySteps();
    const run = await queueRun(store, { source: 'hook:agent', message: 'PR 7' });
    steps.byRun.set(run.id, [
      {
        kind: 'model',
        index: 0,
        text: '',
        calls: [{ callId: 'call_1', tool: 'repo.get_pull_request', arguments: { number: 7 } }],
        status: 'ok',
        startedAt: 1,
        finishedAt: 2,
      },
      {
        kind: 'tool',
        index: 1,
        callId: 'call_1',
        tool: 'repo.get_pull_request',
        arguments: { number: 7 },
        result: 'PR 7 (before the crash)',
        status: 'ok',
        startedAt: 3,
        finishedAt: 4,
      },
    ]);
    llm.script(['Reviewed after the restart.']);
    await start(config, new RecordingToolSource(set), steps);

    const done = await finished(run.id);
    expect(done.status).toBe('succeeded');
    expect(done.reply).toBe('Reviewed after the restart.');
    expect(set.calls).toEqual([]);
    expect(llm.requests).toHaveLength(1);
    const sent = llm.requests[0]?.body.messages ?? [];
    expect(sent.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
    expect(String(sent.at(-1)?.content)).toContain('PR 7 (before the crash)');
  });

  it('fails the run when the model is still calling tools after maxSteps, saying so', async () => {
    const config = configured();
    llm.script([{ toolCalls: [{ name: 'repo__get_pull_request', arguments: { number: 7 } }] }]);
    await start(config, new RecordingToolSource(repo()), new MemorySteps());
    const run = await queueRun(store, { source: 'hook:agent' });
    const done = await finished(run.id);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/still calling tools after 4 model calls/);
    expect(llm.requests).toHaveLength(4);
  });
});
