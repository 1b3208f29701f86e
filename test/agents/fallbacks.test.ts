/**
 * Model fallbacks (docs/agent-runs.md, "Fallbacks"), through the worker against the loopback
 * fakes over real HTTP, in-turn retries kept short by the injected RetryPolicy: a primary
 * answering 529 `overloaded_error`, 503, or 429 with Retry-After is answered by the next model,
 * which the RunView's `model` names; a 400 fails the run without calling the fallback; a chain
 * of three whose first two fail (one of them a refused port); a tool loop whose second call falls
 * back stays on the fallback, and is not sent the primary's signed thinking; each call priced at its own model; a requested model other than
 * the primary has no fallbacks; a streamed call that sent pieces does not fall back; a heartbeat
 * falls back too; the log line; each call's span names its own model; `config check` names a bad fallback's key path.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ModelRouter } from '../../src/agents/models.js';
import { runTurn } from '../../src/agents/turn.js';
import { RunWorker } from '../../src/agents/worker.js';
import { loadConfigFile } from '../../src/config/load.js';
import type { ResolvedAgent, ResolvedConfig } from '../../src/config/resolved.js';
import { HeartbeatScheduler } from '../../src/heartbeat/scheduler.js';
import { createLogger } from '../../src/log.js';
import { startTracing } from '../../src/observability/tracing.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ToolSource } from '../../src/tools/types.js';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeOtlp, startFakeOtlp } from '../fakes/otlp.js';
import { queueEvent, queueRun } from '../helpers/agent-rig.js';
import { tempDir, writeConfig } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { fakeToolSet } from './tools/fake-tool-set.js';

const OWNER = 'test-host:1:worker';
/** Two calls per model (one retry), a millisecond apart: the retries run, but fast. */
const SHORT_RETRY = { maxCalls: 2, baseDelayMs: 1, maxDelayMs: 5 };
const CLAUDE = 'claude/claude-sonnet-4-5';
const OAI = 'oai/gpt-5-mini';

let openai: FakeOpenAi;
let anthropic: FakeAnthropic;
/** A provider whose port refuses connections (an unreachable provider). */
let refusedUrl: string;
let dir: string;
let store: SqliteStore;
let worker: RunWorker | undefined;
let logged: Record<string, unknown>[];

beforeAll(async () => {
  openai = await startFakeOpenAi({ apiKey: 'sk-test', streamDelayMs: 1 });
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test', streamDelayMs: 1 });
  const closed = await startFakeOpenAi();
  refusedUrl = closed.baseUrl;
  await closed.close();
});
afterAll(async () => {
  await openai.close();
  await anthropic.close();
});
afterEach(async () => {
  await worker?.stop(0);
  worker = undefined;
  await store?.close();
  store = undefined as unknown as SqliteStore;
  if (dir) rmSync(dir, { recursive: true, force: true });
  openai.requests.length = 0;
  anthropic.requests.length = 0;
});

function configFile(model: unknown, defaults: Record<string, unknown> = {}): string {
  dir = tempDir('agentgate-fallbacks-');
  const configDir = join(dir, 'config');
  mkdirSync(configDir);
  return writeConfig(configDir, {
    models: {
      providers: {
        oai: {
          api: 'openai-chat',
          baseUrl: openai.baseUrl,
          apiKey: 'sk-test',
          prices: { 'gpt-5-mini': { input: 0.25, output: 2 } },
        },
        claude: {
          api: 'anthropic-messages',
          baseUrl: anthropic.url,
          apiKey: 'sk-ant-test',
          prices: { 'claude-sonnet-4-5': { input: 3, output: 15 } },
        },
        down: { api: 'openai-chat', baseUrl: refusedUrl, apiKey: 'sk-down' },
        claude2: { api: 'anthropic-messages', baseUrl: anthropic.url, apiKey: 'sk-ant-test' },
      },
    },
    tools: { servers: { repo: { transport: 'stdio', command: ['node', 'repo.js'] } } },
    agents: {
      defaults: { model, heartbeat: { every: '0' }, ...defaults },
      list: [{ id: 'main', default: true, tools: { allow: ['repo.*'], maxSteps: 4 } }],
    },
  });
}

function configured(model: unknown): ResolvedConfig {
  const loaded = loadConfigFile(configFile(model), process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  store = new SqliteStore({ path: join(dir, `${randomUUID()}.db`), synchronous: 'normal' });
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

/** The warnings the worker logs, parsed. */
function capturingLog() {
  logged = [];
  return pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
}

async function start(config: ResolvedConfig, withTools = false) {
  worker = new RunWorker({
    store,
    config,
    models: new ModelRouter(config),
    log: capturingLog(),
    owner: OWNER,
    providerRetry: SHORT_RETRY,
    pollMs: 20,
    ...(withTools ? { tools: tools(), steps: store.steps } : {}),
    metrics: { runFinished() {} },
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

const fallbackLines = () => logged.filter((line) => line.msg === 'model call failed; falling back');

describe('model fallbacks', () => {
  it('a primary answering 529 overloaded_error is answered by the fallback, which the RunView names', async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    anthropic.script([{ status: 529, error: 'Overloaded' }]);
    openai.script([{ usage: { prompt: 100, completion: 10 }, reply: 'from the fallback' }]);
    await start(config);
    const run = await queueRun(store, { model: CLAUDE });
    const done = await finished(run.id);
    expect(done.status).toBe('succeeded');
    expect(done.reply).toBe('from the fallback');
    expect(done.model).toBe(OAI);
    // Its in-turn retries first, then the fallback.
    expect(anthropic.requests).toHaveLength(2);
    expect(openai.requests).toHaveLength(1);
    expect(openai.requests[0]?.body.model).toBe('gpt-5-mini');
    // Priced at the model that made the tokens.
    expect(done.usage.costUsd).toBeCloseTo((100 * 0.25 + 10 * 2) / 1e6, 12);
    const [line] = fallbackLines();
    expect(line).toMatchObject({ runId: run.id, from: CLAUDE, to: OAI, status: 529 });
    expect(JSON.stringify(logged)).not.toContain('sk-ant-test');
  });

  it('a 429 with Retry-After on the primary falls back once its retries ran out', async () => {
    const config = configured({ primary: OAI, fallbacks: [CLAUDE] });
    openai.script([{ status: 429, error: 'Rate limit reached', retryAfter: '1' }]);
    anthropic.script(['claude answers']);
    await start(config);
    const done = await finished((await queueRun(store)).id);
    expect(done.status).toBe('succeeded');
    expect(done.model).toBe(CLAUDE);
    expect(openai.requests).toHaveLength(2);
    expect(fallbackLines()[0]).toMatchObject({ from: OAI, to: CLAUDE, status: 429 });
  });

  it('a 400 on the primary fails the run without calling the fallback', async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    anthropic.script([{ status: 400, error: 'messages: bad request' }]);
    await start(config);
    const done = await finished((await queueRun(store)).id);
    expect(done.status).toBe('failed');
    expect(done.error).toContain('bad request');
    expect(done.model).toBe(CLAUDE);
    expect(anthropic.requests).toHaveLength(1);
    expect(openai.requests).toHaveLength(0);
    expect(fallbackLines()).toEqual([]);
  });

  it('a chain of three: a 503 and an unreachable provider, then the third answers', async () => {
    const config = configured({ primary: CLAUDE, fallbacks: ['down/gpt-x', OAI] });
    anthropic.script([{ status: 503, error: 'unavailable' }]);
    openai.script(['the third answers']);
    await start(config);
    const done = await finished((await queueRun(store)).id);
    expect(done.status).toBe('succeeded');
    expect(done.reply).toBe('the third answers');
    expect(done.model).toBe(OAI);
    expect(fallbackLines().map((line) => [line.from, line.to, line.status])).toEqual([
      [CLAUDE, 'down/gpt-x', 503],
      ['down/gpt-x', OAI, undefined],
    ]);
    expect(String(fallbackLines()[1]?.error)).toContain('ECONNREFUSED');
    expect(JSON.stringify(logged)).not.toContain('sk-down');
  });

  it('every model of the chain failing fails the run, naming the last one', async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    anthropic.script([{ status: 529, error: 'Overloaded' }]);
    openai.script([{ status: 503, error: 'down for maintenance' }]);
    await start(config);
    const done = await finished((await queueRun(store)).id);
    expect(done.status).toBe('failed');
    expect(done.error).toContain('down for maintenance');
    expect(done.model).toBe(OAI);
  });

  it("a tool loop's second call falls back, and its later calls stay on the fallback", async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    anthropic.script([
      { usage: { input: 100, output: 10 }, reply: { toolUses: [{ name: 'repo__get', input: {} }] } },
      { status: 529, error: 'Overloaded' },
    ]);
    openai.script([
      {
        usage: { prompt: 200, completion: 20 },
        reply: { toolCalls: [{ name: 'repo__get', arguments: {} }] },
      },
      { usage: { prompt: 300, completion: 30 }, reply: 'Reviewed PR 7.' },
    ]);
    await start(config, true);
    const run = await queueRun(store);
    const done = await finished(run.id);
    expect(done.status).toBe('succeeded');
    expect(done.reply).toBe('Reviewed PR 7.');
    expect(done.model).toBe(OAI);
    // One answered call and two overloaded ones to the primary; the rest to the fallback.
    expect(anthropic.requests).toHaveLength(3);
    expect(openai.requests).toHaveLength(2);
    // The fallback got the conversation so far: the tool's result among it.
    expect(JSON.stringify(openai.requests[0]?.body.messages)).toContain('PR 7');
    expect(fallbackLines()).toHaveLength(1);
    // Each call at its own model's price.
    expect(done.usage.costUsd).toBeCloseTo((100 * 3 + 10 * 15 + 500 * 0.25 + 50 * 2) / 1e6, 12);
    const steps = await store.steps.list(run.id);
    expect(steps.map((s) => s.kind)).toEqual(['model', 'tool', 'model', 'tool', 'model']);
  });

  it("a fallback is not sent the primary's signed thinking blocks; it calls without thinking", async () => {
    const config = configured({ primary: CLAUDE, fallbacks: ['claude2/claude-haiku-4-5'] });
    anthropic.script([
      { thinking: 'look it up', toolUses: [{ name: 'repo__get', input: {} }] },
      { status: 529, error: 'Overloaded' },
      { status: 529, error: 'Overloaded' },
      'Reviewed PR 7.',
    ]);
    await start(config, true);
    const done = await finished((await queueRun(store, { thinking: 'low' })).id);
    expect(done.status).toBe('succeeded');
    expect(done.model).toBe('claude2/claude-haiku-4-5');
    const last = anthropic.requests.at(-1)?.body;
    expect(last?.model).toBe('claude-haiku-4-5');
    expect(JSON.stringify(last?.messages)).not.toContain('"thinking"');
    expect(last?.thinking).toBeUndefined();
    // The primary's second call still had its own blocks.
    expect(JSON.stringify(anthropic.requests[1]?.body.messages)).toContain('look it up');
  });

  it('a requested model other than the primary has no fallbacks', async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    openai.script([{ status: 503, error: 'unavailable' }]);
    await start(config);
    const done = await finished((await queueRun(store, { model: OAI })).id);
    expect(done.status).toBe('failed');
    expect(anthropic.requests).toHaveLength(0);
    expect(fallbackLines()).toEqual([]);
  });

  it('a string model means no fallbacks', async () => {
    const config = configured(CLAUDE);
    anthropic.script([{ status: 529, error: 'Overloaded' }]);
    await start(config);
    const done = await finished((await queueRun(store)).id);
    expect(done.status).toBe('failed');
    expect(openai.requests).toHaveLength(0);
  });

  it('a streamed call that already sent pieces does not fall back', async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    anthropic.script([{ stream: ['Hel', 'lo'], fail: { error: 'Overloaded' } }]);
    const pieces: string[] = [];
    const failure = await runTurn(
      { store, models: new ModelRouter(config), retry: SHORT_RETRY },
      {
        agent: config.agents.list[0] as ResolvedAgent,
        model: null,
        sessionKey: 'hook:stream',
        userTurn: 'hi',
        signal: new AbortController().signal,
        onDelta: (text) => pieces.push(text),
      },
    ).catch((error: Error) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(pieces.join('')).toBe('Hello');
    expect(anthropic.requests).toHaveLength(1);
    expect(openai.requests).toHaveLength(0);
  });
});

describe('a heartbeat', () => {
  it("falls back along its agent's chain", async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    anthropic.script([{ status: 529, error: 'Overloaded' }]);
    openai.script([{ usage: { prompt: 40, completion: 4 }, reply: 'HEARTBEAT_OK' }]);
    const heartbeat = new HeartbeatScheduler({
      store,
      config,
      models: new ModelRouter(config),
      log: capturingLog(),
      providerRetry: SHORT_RETRY,
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
      expect(beat?.status).toBe('succeeded');
      expect(beat?.usage.costUsd).toBeCloseTo((40 * 0.25 + 4 * 2) / 1e6, 12);
      expect(anthropic.requests).toHaveLength(2);
      expect(fallbackLines()[0]).toMatchObject({ from: CLAUDE, to: OAI, status: 529 });
    } finally {
      await heartbeat.stop(0);
    }
  });
});

describe('model fallback spans', () => {
  let otlp: FakeOtlp;
  beforeAll(async () => {
    otlp = await startFakeOtlp();
  });
  afterAll(() => otlp.close());

  it("each call's span names its own model", async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    anthropic.script([{ status: 529, error: 'Overloaded' }]);
    openai.script(['fine']);
    const tracing = await startTracing(
      { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
      createLogger('silent'),
    );
    if (!tracing) throw new Error('tracing did not start');
    const span = tracing.startSpan('agentgate.run', { kind: 'consumer' });
    const reply = await span.activate(() =>
      runTurn(
        { store, models: new ModelRouter(config), retry: SHORT_RETRY, span },
        {
          agent: config.agents.list[0] as ResolvedAgent,
          model: null,
          sessionKey: 'hook:spans',
          userTurn: 'hi',
          signal: new AbortController().signal,
        },
      ),
    );
    span.end();
    await tracing.shutdown();
    expect(reply).toBe('fine');
    const calls = await otlp.waitForSpans((s) => s.name.startsWith('chat '), 3);
    const byName = (name: string) => calls.filter((s) => s.name === name);
    const failed = byName('chat claude-sonnet-4-5');
    expect(failed).toHaveLength(2);
    for (const call of failed) {
      expect(call.attributes['gen_ai.request.model']).toBe('claude-sonnet-4-5');
      expect(call.attributes['error.type']).toBe('529');
      expect(call.attributes['gen_ai.response.model']).toBeUndefined();
    }
    const [answered] = byName('chat gpt-5-mini');
    expect(answered?.attributes['gen_ai.request.model']).toBe('gpt-5-mini');
    expect(answered?.attributes['gen_ai.response.model']).toBe('gpt-5-mini');
    expect(answered?.attributes['agentgate.provider']).toBe('oai');
  });
});

describe('which models a run calls', () => {
  it("resolves the chain's aliases; the primary (or none) gets the chain, another model only itself", () => {
    const path = configFile(
      { primary: 'sonnet', fallbacks: ['mini'] },
      {
        models: [
          { id: CLAUDE, alias: 'sonnet' },
          { id: OAI, alias: 'mini' },
        ],
      },
    );
    const loaded = loadConfigFile(path, {});
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const router = new ModelRouter(loaded.config);
    expect(router.defaultFor('main')).toBe(CLAUDE);
    expect(router.chainFor('main', null)).toEqual([CLAUDE, OAI]);
    expect(router.chainFor('main', CLAUDE)).toEqual([CLAUDE, OAI]);
    expect(router.chainFor('main', OAI)).toEqual([OAI]);
  });
});

describe('config check of a chain', () => {
  it('names each bad reference of the chain by its key path', () => {
    const loaded = loadConfigFile(configFile({ primary: CLAUDE, fallbacks: [OAI, 'nope/x', 'bare'] }), {});
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.problems).toContain(
      'agents.defaults.model.fallbacks[1]: provider "nope" is not configured in models.providers',
    );
    expect(loaded.problems).toContain(
      'agents.defaults.model.fallbacks[2]: "bare" must be "<provider>/<model>"',
    );
  });
});
