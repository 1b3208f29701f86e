/**
 * One agent turn (src/agents/turn.ts) against the loopback OpenAI fake over real
 * HTTP and a real SQLite store: what is sent, and which provider errors are
 * retried, how often and after how long. Waits are recorded, not slept.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ModelRouter } from '../../src/agents/models.js';
import { ProviderError } from '../../src/agents/providers/types.js';
import { DEFAULT_RETRY, retryDelay, runTurn, type TurnDeps } from '../../src/agents/turn.js';
import { loadConfigFile } from '../../src/config/load.js';
import type { ResolvedAgent } from '../../src/config/resolved.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { tempDir, writeConfig } from '../helpers/gateway.js';

let llm: FakeOpenAi;
let store: SqliteStore;
let waits: number[];
const dir = tempDir('agentgate-turn-');

beforeAll(async () => {
  llm = await startFakeOpenAi({ apiKey: 'sk-test' });
});
afterAll(async () => {
  await llm.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  store = new SqliteStore({ path: join(dir, `${randomUUID()}.db`) });
  waits = [];
  llm.requests.length = 0;
});
afterEach(() => store.close());

function setUp(baseUrl = llm.baseUrl): { deps: TurnDeps; agent: ResolvedAgent } {
  const configDir = join(dir, randomUUID());
  mkdirSync(configDir);
  const path = writeConfig(configDir, {
    models: { providers: { fake: { api: 'openai-chat', baseUrl, apiKey: 'sk-test' } } },
    agents: { defaults: { model: 'fake/gpt-test' } },
  });
  const loaded = loadConfigFile(path, process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  const deps: TurnDeps = {
    store,
    models: new ModelRouter(loaded.config),
    random: () => 1,
    sleep: async (ms, signal) => {
      waits.push(ms);
      signal.throwIfAborted();
    },
  };
  return { deps, agent: loaded.config.agents.list[0] as ResolvedAgent };
}

const turn = (agent: ResolvedAgent, signal = new AbortController().signal) => ({
  agent,
  model: null,
  sessionKey: 'hook:turn',
  userTurn: 'hello',
  signal,
});

/** Answers with each reply in turn, then the last one forever. */
function replies(...sequence: Parameters<FakeOpenAi['setReply']>[0][]) {
  let call = 0;
  llm.setReply((body, request) => {
    const handler = sequence[Math.min(call, sequence.length - 1)] as Parameters<FakeOpenAi['setReply']>[0];
    call += 1;
    return handler(body, request);
  });
}

describe('an agent turn', () => {
  it('sends the transcript and the new turn to the agent default model', async () => {
    const { deps, agent } = setUp();
    llm.setReply(() => 'the answer');
    expect(await runTurn(deps, turn(agent))).toBe('the answer');
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]?.body.model).toBe('gpt-test');
    expect(llm.requests[0]?.body.messages.at(-1)).toEqual({ role: 'user', content: 'hello' });
  });

  it('waits as long as a 429 Retry-After says, then succeeds', async () => {
    const { deps, agent } = setUp();
    replies(
      () => ({ status: 429, error: 'Rate limit reached', retryAfter: '2' }),
      () => 'after the wait',
    );
    expect(await runTurn(deps, turn(agent))).toBe('after the wait');
    expect(llm.requests).toHaveLength(2);
    expect(waits).toEqual([2000]);
  });

  it('retries 5xx with doubling backoff up to the bound, then fails with the provider error', async () => {
    const { deps, agent } = setUp();
    llm.setReply(() => ({ status: 503, error: 'The engine is currently overloaded' }));
    const failure = await runTurn(deps, turn(agent)).catch((error) => error);
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure.message).toMatch(/503 The engine is currently overloaded/);
    expect(llm.requests).toHaveLength(DEFAULT_RETRY.maxCalls);
    expect(waits).toEqual([1000, 2000, 4000]);
  });

  it('succeeds when a 5xx passes before the bound', async () => {
    const { deps, agent } = setUp();
    replies(
      () => ({ status: 500, error: 'boom' }),
      () => ({ status: 502, error: 'bad gateway' }),
      () => 'third time',
    );
    expect(await runTurn(deps, turn(agent))).toBe('third time');
    expect(llm.requests).toHaveLength(3);
  });

  it.each([
    [400, 'Invalid value for messages'],
    [401, 'Incorrect API key provided'],
    [403, 'not allowed'],
    [404, 'The model does not exist'],
  ])('does not retry a %i', async (status, error) => {
    const { deps, agent } = setUp();
    llm.setReply(() => ({ status, error }));
    await expect(runTurn(deps, turn(agent))).rejects.toThrow(String(status));
    expect(llm.requests).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('retries a provider it cannot reach (connection refused)', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const { deps, agent } = setUp(`http://127.0.0.1:${closedPort}/v1`);
    const failure = await runTurn(deps, turn(agent)).catch((error) => error);
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure.transient).toBe(true);
    expect(failure.message).toMatch(/could not reach 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    expect(waits).toHaveLength(DEFAULT_RETRY.maxCalls - 1);
  });

  it('stops retrying when the turn is aborted while it waits', async () => {
    const { deps, agent } = setUp();
    const controller = new AbortController();
    const reason = new Error('run timed out');
    deps.sleep = async (ms, signal) => {
      waits.push(ms);
      controller.abort(reason);
      signal.throwIfAborted();
    };
    llm.setReply(() => ({ status: 429, error: 'slow down' }));
    await expect(runTurn(deps, turn(agent, controller.signal))).rejects.toBe(reason);
    expect(llm.requests).toHaveLength(1);
  });
});

describe('retry delays', () => {
  const policy = { maxCalls: 10, baseDelayMs: 1000, maxDelayMs: 30_000 };

  it('double from the base, with jitter between half and all of the ceiling', () => {
    expect([1, 2, 3, 4].map((call) => retryDelay(policy, call, undefined, () => 1))).toEqual([
      1000, 2000, 4000, 8000,
    ]);
    expect([1, 2, 3, 4].map((call) => retryDelay(policy, call, undefined, () => 0))).toEqual([
      500, 1000, 2000, 4000,
    ]);
  });

  it('never exceed the cap, a long Retry-After included', () => {
    expect(retryDelay(policy, 20, undefined, () => 1)).toBe(30_000);
    expect(retryDelay(policy, 1, 3_600_000, () => 1)).toBe(30_000);
    expect(retryDelay(policy, 1, 0, () => 1)).toBe(0);
  });
});
