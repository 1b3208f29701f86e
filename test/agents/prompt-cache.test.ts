/**
 * Prompt caching end to end (docs/usage.md, "Prompt caching"): runs of one session through the
 * worker against the fake Anthropic, which caches as the API does. A session's second turn
 * reads its prefix from the cache (the RunView's `cacheReadTokens`); and the measurement — a
 * ten-turn session priced at claude-sonnet-4-5's prices, with and without `promptCache` — whose
 * figures this test prints and docs/usage.md quotes: caching is substantially cheaper there,
 * and dearer for a session of one turn (a cache write costs 1.25× input). Through the fake
 * OpenAI, each run carries its session's `prompt_cache_key`.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ModelRouter } from '../../src/agents/models.js';
import { RunWorker } from '../../src/agents/worker.js';
import { loadConfigFile } from '../../src/config/load.js';
import type { ResolvedConfig } from '../../src/config/resolved.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { RunView } from '../../src/store/types.js';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { NO_RETRY, queueRun, silentLog } from '../helpers/agent-rig.js';
import { tempDir, writeConfig } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const OWNER = 'test-host:1:worker';
/** An agent's instructions of about 2,000 tokens (8,000 characters), a typical SYSTEM.md. */
const SYSTEM = `${'You are the release assistant of the platform team. Answer with the facts you are given. '.repeat(89)}`;
/** About 100 tokens a question, 200 an answer. */
const question = (n: number) => `Question ${n}: ${'what changed in the release, and why? '.repeat(10)}`;
const answer = (n: number) => `Answer ${n}: ${'the parser was rewritten to stream its input. '.repeat(17)}`;

let anthropic: FakeAnthropic;
let openai: FakeOpenAi;
let dir: string;
let store: SqliteStore;
let worker: RunWorker | undefined;

beforeAll(async () => {
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test', caching: true });
  openai = await startFakeOpenAi({ apiKey: 'sk-test' });
});
afterAll(async () => {
  await anthropic.close();
  await openai.close();
});
afterEach(async () => {
  await worker?.stop(0);
  worker = undefined;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(promptCache: boolean, model = 'claude/claude-sonnet-4-5'): Promise<void> {
  dir = tempDir('agentgate-prompt-cache-');
  const configDir = join(dir, 'config');
  const workspace = join(dir, 'workspace');
  mkdirSync(configDir);
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'SYSTEM.md'), SYSTEM);
  const path = writeConfig(configDir, {
    models: {
      providers: {
        claude: {
          api: 'anthropic-messages',
          baseUrl: anthropic.url,
          apiKey: 'sk-ant-test',
          promptCache,
          prices: { 'claude-sonnet-4-5': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
        },
        oai: { api: 'openai-chat', baseUrl: openai.baseUrl, apiKey: 'sk-test', promptCache },
      },
    },
    agents: {
      defaults: { model, heartbeat: { every: '0' } },
      list: [{ id: 'main', default: true, workspace }],
    },
  });
  const loaded = loadConfigFile(path, process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  const config: ResolvedConfig = loaded.config;
  store = new SqliteStore({ path: join(dir, 'store.db'), synchronous: 'normal' });
  anthropic.clearCache();
  anthropic.requests.length = 0;
  openai.requests.length = 0;
  let turn = 0;
  anthropic.setReply(() => answer(++turn));
  worker = new RunWorker({
    store,
    config,
    models: new ModelRouter(config),
    log: silentLog,
    owner: OWNER,
    providerRetry: NO_RETRY,
    pollMs: 10,
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
    5,
  );

/** A session of `turns` runs, one after the other; their RunViews. */
async function session(turns: number, sessionKey = 'hook:release'): Promise<RunView[]> {
  const runs: RunView[] = [];
  for (let n = 1; n <= turns; n++) {
    const run = await queueRun(store, { sessionKey, message: question(n) });
    const done = await finished(run.id);
    expect(done.status).toBe('succeeded');
    runs.push(done);
  }
  return runs;
}

const total = (runs: RunView[]) => {
  const sum = (field: 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens') =>
    runs.reduce((n, run) => n + run.usage[field], 0);
  return {
    inputTokens: sum('inputTokens'),
    cacheReadTokens: sum('cacheReadTokens'),
    cacheWriteTokens: sum('cacheWriteTokens'),
    outputTokens: sum('outputTokens'),
    costUsd: runs.reduce((n, run) => n + (run.usage.costUsd ?? 0), 0),
  };
};

describe('prompt caching through the worker (anthropic-messages)', () => {
  it("a session's second turn reads the system prompt and the first exchange from the cache", async () => {
    await start(true);
    const [first, second] = await session(2);
    expect(first?.usage.cacheReadTokens).toBe(0);
    expect(first?.usage.cacheWriteTokens).toBeGreaterThan(1024);
    expect(second?.usage.cacheReadTokens).toBe(first?.usage.cacheWriteTokens);
    const third = (await session(1))[0];
    // The third turn reads the second's whole prefix: the system prompt and the first exchange.
    expect(third?.usage.cacheReadTokens).toBe(
      (second?.usage.cacheReadTokens ?? 0) + (second?.usage.cacheWriteTokens ?? 0),
    );
  });

  it('measured: a ten-turn session costs substantially less cached, a one-turn session a little more', async () => {
    await start(true);
    const cached = total(await session(10));
    await worker?.stop(0);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    await start(false);
    const uncached = total(await session(10));
    expect(uncached.cacheReadTokens + uncached.cacheWriteTokens).toBe(0);
    // The same conversation either way.
    expect(cached.inputTokens).toBe(uncached.inputTokens);
    expect(cached.outputTokens).toBe(uncached.outputTokens);
    expect(cached.costUsd).toBeLessThan(uncached.costUsd * 0.6);

    await worker?.stop(0);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    await start(true);
    const oneCached = total(await session(1));
    await worker?.stop(0);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    await start(false);
    const oneUncached = total(await session(1));
    expect(oneCached.costUsd).toBeGreaterThan(oneUncached.costUsd);

    const row = (name: string, t: ReturnType<typeof total>) =>
      `${name.padEnd(22)} input ${String(t.inputTokens).padStart(6)}  read ${String(t.cacheReadTokens).padStart(6)}  write ${String(t.cacheWriteTokens).padStart(5)}  output ${String(t.outputTokens).padStart(5)}  $${t.costUsd.toFixed(6)}`;
    console.log(
      [
        'prompt caching, claude-sonnet-4-5 prices (input 3, output 15, cacheRead 0.3, cacheWrite 3.75 per million):',
        row('10 turns, cached', cached),
        row('10 turns, uncached', uncached),
        `  saved ${(100 * (1 - cached.costUsd / uncached.costUsd)).toFixed(1)}%`,
        row('1 turn, cached', oneCached),
        row('1 turn, uncached', oneUncached),
        `  dearer by ${(100 * (oneCached.costUsd / oneUncached.costUsd - 1)).toFixed(1)}%`,
      ].join('\n'),
    );
  }, 60_000);
});

describe('prompt caching through the worker (openai-chat)', () => {
  it("each run sends its session's prompt_cache_key: one per session, none when off", async () => {
    await start(true, 'oai/gpt-5-mini');
    await session(2, 'hook:telegram:+15551234567');
    await session(1, 'hook:telegram:+15557654321');
    const keys = openai.requests.map((r) => r.body.prompt_cache_key);
    expect(keys[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).toMatch(/^[0-9a-f]{32}$/);
    expect(keys[2]).not.toBe(keys[0]);
    await worker?.stop(0);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    await start(false, 'oai/gpt-5-mini');
    await session(1);
    expect(openai.requests[0]?.body).not.toHaveProperty('prompt_cache_key');
  });
});
