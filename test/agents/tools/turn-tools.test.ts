/**
 * A turn with tools (src/agents/turn.ts → tool-loop.ts) against the loopback OpenAI fake
 * over real HTTP and a real SQLite store: the loop's requests as the API gets them, the
 * per-call retry of transient errors, one `execute_tool` span per call as a child of the
 * run's span (exported over OTLP to the fake receiver), and agentgate_tool_calls_total.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ModelRouter } from '../../../src/agents/models.js';
import { memoryStepLog } from '../../../src/agents/step-log.js';
import { runTurn, type TurnDeps } from '../../../src/agents/turn.js';
import { loadConfigFile } from '../../../src/config/load.js';
import type { ResolvedAgent } from '../../../src/config/resolved.js';
import { createLogger } from '../../../src/log.js';
import { GatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { startTracing } from '../../../src/observability/tracing.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../fakes/openai.js';
import { type FakeOtlp, SPAN_KIND_INTERNAL, STATUS_CODE_ERROR, startFakeOtlp } from '../../fakes/otlp.js';
import { tempDir, writeConfig } from '../../helpers/gateway.js';
import { fakeToolSet } from './fake-tool-set.js';

let llm: FakeOpenAi;
let store: SqliteStore;
const dir = tempDir('agentgate-turn-tools-');

beforeAll(async () => {
  llm = await startFakeOpenAi({ apiKey: 'sk-test' });
});
afterAll(async () => {
  await llm.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  store = new SqliteStore({ path: join(dir, `${randomUUID()}.db`) });
  llm.requests.length = 0;
});
afterEach(() => store.close());

function setUp(extra: Partial<TurnDeps> = {}): { deps: TurnDeps; agent: ResolvedAgent } {
  const configDir = join(dir, randomUUID());
  mkdirSync(configDir);
  const path = writeConfig(configDir, {
    models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
    agents: { defaults: { model: 'fake/gpt-test' } },
  });
  const loaded = loadConfigFile(path, process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  const deps: TurnDeps = {
    store,
    models: new ModelRouter(loaded.config),
    random: () => 1,
    sleep: async (_ms, signal) => signal.throwIfAborted(),
    ...extra,
  };
  return { deps, agent: loaded.config.agents.list[0] as ResolvedAgent };
}

const tools = () =>
  fakeToolSet({
    'repo.get_pull_request': { answer: (args) => ({ status: 'ok', text: `PR ${String(args.number)}: fix` }) },
    'tickets.create_ticket': { answer: () => ({ status: 'error', text: 'the tickets server died' }) },
  });

const turn = (agent: ResolvedAgent, set = tools(), steps = memoryStepLog()) => ({
  agent,
  model: null,
  sessionKey: 'hook:tools',
  userTurn: 'review PR 7',
  signal: new AbortController().signal,
  tools: { set, steps },
});

describe('a turn with tools', () => {
  it('loops over real HTTP: offers the tools, sends the wrapped results back, ends with the final text', async () => {
    const { deps, agent } = setUp();
    llm.script([
      { toolCalls: [{ id: 'call_1', name: 'repo__get_pull_request', arguments: { number: 7 } }] },
      'It fixes the parser.',
    ]);
    const set = tools();
    const steps = memoryStepLog();
    expect(await runTurn(deps, turn(agent, set, steps))).toBe('It fixes the parser.');

    expect(llm.requests).toHaveLength(2);
    const names = ((llm.requests[0]?.body.tools ?? []) as { function: { name: string } }[]).map(
      (t) => t.function.name,
    );
    expect(names).toEqual(['repo__get_pull_request', 'tickets__create_ticket']);
    const [, assistant, result] = llm.requests[1]?.body.messages ?? [];
    expect(assistant).toMatchObject({ role: 'assistant', content: null, tool_calls: [{ id: 'call_1' }] });
    expect(result).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
    expect(result?.content).toMatch(
      /^SECURITY NOTICE: .*\n<<<EXTERNAL_UNTRUSTED_CONTENT id="[0-9a-f]{16}" source="tool:repo.get_pull_request" kind="tool-result">>>\nPR 7: fix\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id="[0-9a-f]{16}">>>$/,
    );
    expect(set.calls).toEqual([{ name: 'repo.get_pull_request', arguments: { number: 7 } }]);
    expect(steps.all.map((s) => s.kind)).toEqual(['model', 'tool', 'model']);
  });

  it('retries a transient provider error per model call, without calling the tool again', async () => {
    const { deps, agent } = setUp();
    let call = 0;
    llm.setReply(() => {
      call += 1;
      if (call === 1)
        return { toolCalls: [{ id: 'call_1', name: 'repo__get_pull_request', arguments: { number: 7 } }] };
      if (call === 2) return { status: 503, error: 'overloaded' };
      return 'done after a retry';
    });
    const set = tools();
    expect(await runTurn(deps, turn(agent, set))).toBe('done after a retry');
    expect(llm.requests).toHaveLength(3);
    expect(set.calls).toHaveLength(1);
  });

  it('counts each call in agentgate_tool_calls_total by tool and status', async () => {
    const metrics = new GatewayMetrics(store);
    const { deps, agent } = setUp({ toolMetrics: metrics });
    llm.script([
      {
        toolCalls: [
          { id: 'c1', name: 'repo__get_pull_request', arguments: { number: 7 } },
          { id: 'c2', name: 'tickets__create_ticket', arguments: {} },
          { id: 'c3', name: 'made_up_tool', arguments: {} },
        ],
      },
      'done',
    ]);
    await runTurn(deps, turn(agent));
    const text = await metrics.exposition();
    expect(text).toContain('agentgate_tool_calls_total{tool="repo.get_pull_request",status="ok"} 1');
    expect(text).toContain('agentgate_tool_calls_total{tool="tickets.create_ticket",status="error"} 1');
    expect(text).toContain('agentgate_tool_calls_total{tool="unknown",status="error"} 1');
  });
});

describe('tool call spans', () => {
  let otlp: FakeOtlp;
  beforeAll(async () => {
    otlp = await startFakeOtlp();
  });
  afterAll(() => otlp.close());

  it('makes one execute_tool span per call, a child of the run span, with gen_ai.tool.name', async () => {
    const tracing = await startTracing(
      { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
      createLogger('silent'),
    );
    if (!tracing) throw new Error('tracing did not start');
    const run = tracing.startSpan('agentgate.run', { kind: 'consumer' });
    const { deps, agent } = setUp({ span: run });
    llm.script([
      {
        toolCalls: [
          { id: 'c1', name: 'repo__get_pull_request', arguments: { number: 7 } },
          { id: 'c2', name: 'tickets__create_ticket', arguments: {} },
        ],
      },
      'done',
    ]);
    await run.activate(() => runTurn(deps, turn(agent)));
    run.end();
    await tracing.shutdown();

    const [runSpan] = await otlp.waitForSpans((span) => span.name === 'agentgate.run');
    const toolSpans = await otlp.waitForSpans((span) => span.name.startsWith('execute_tool '), 2);
    expect(toolSpans.map((s) => s.name).sort()).toEqual([
      'execute_tool repo.get_pull_request',
      'execute_tool tickets.create_ticket',
    ]);
    for (const span of toolSpans) {
      expect(span.parentSpanId).toBe(runSpan?.spanId);
      expect(span.traceId).toBe(runSpan?.traceId);
      expect(span.kind).toBe(SPAN_KIND_INTERNAL);
      expect(span.attributes['gen_ai.operation.name']).toBe('execute_tool');
      expect(span.attributes['gen_ai.tool.name']).toBe(span.name.slice('execute_tool '.length));
    }
    const failed = toolSpans.find((s) => s.name === 'execute_tool tickets.create_ticket');
    expect(failed?.status.code).toBe(STATUS_CODE_ERROR);
    expect(failed?.attributes['agentgate.tool.status']).toBe('error');
    expect(failed?.attributes['gen_ai.tool.call.id']).toBe('c2');
  });
});
