/**
 * Provider limits (docs/agent-runs.md, "Provider limits") through the worker, against the
 * loopback OpenAI and Anthropic fakes over real HTTP, on a manual clock: `maxConcurrent` keeps
 * one provider's calls to its cap while the runs beyond it stay queued and another provider's
 * run goes through; a 429 whose Retry-After outlasts the in-turn retries puts the run back
 * (`queued`, `notBefore`), holds the provider's other runs until then, and the run starts again
 * when the time comes, also one deferred by another process; a chain with a free fallback is
 * not held; a run held back longer than its timeout in all fails `rate_limited`; a tool loop's
 * every call waits for its slot; other holds join the providers'. The config key; and the gate
 * on its own: order, aborts, reservations, the freed signal, rate limits on the clock.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ModelRouter } from '../../src/agents/models.js';
import { ProviderLimits } from '../../src/agents/provider-limits.js';
import { RunWorker } from '../../src/agents/worker.js';
import { loadConfigFile } from '../../src/config/load.js';
import type { ResolvedConfig } from '../../src/config/resolved.js';
import { combineHolds } from '../../src/store/rules/claim-hold.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ClaimHold } from '../../src/store/types.js';
import type { ToolSource } from '../../src/tools/types.js';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic.js';
import { HeldProvider, queueRun } from '../helpers/agent-rig.js';
import { tempDir, writeConfig } from '../helpers/gateway.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { waitFor } from '../helpers/wait.js';
import { fakeToolSet } from './tools/fake-tool-set.js';

const OWNER = 'test-host:1:worker';
/** Two calls per model, their wait at most 5 ms: any Retry-After in seconds outlasts them. */
const SHORT_RETRY = { maxCalls: 2, baseDelayMs: 1, maxDelayMs: 5 };
const CLAUDE = 'claude/claude-sonnet-4-5';
const OAI = 'oai/gpt-5-mini';

let held: HeldProvider;
let anthropic: FakeAnthropic;
let dir: string;
let store: SqliteStore;
let clock: ManualClock;
let limits: ProviderLimits;
let worker: RunWorker | undefined;
let logged: Record<string, unknown>[];
let deferrals: string[];

beforeAll(async () => {
  held = await HeldProvider.start();
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test' });
});
afterAll(async () => {
  await held.close();
  await anthropic.close();
});
afterEach(async () => {
  const stopping = worker?.stop(0);
  await clock?.advance(0);
  await stopping;
  worker = undefined;
  for (const call of held.calls) call.answer('late');
  held.calls.length = 0;
  held.inFlight = 0;
  held.maxInFlight = 0;
  anthropic.requests.length = 0;
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function configured(model: unknown, oaiCap?: number, withTools = false): ResolvedConfig {
  dir = tempDir('agentgate-plimits-');
  const configDir = join(dir, 'config');
  mkdirSync(configDir);
  const path = writeConfig(configDir, {
    models: {
      providers: {
        oai: {
          api: 'openai-chat',
          baseUrl: held.fake.baseUrl,
          apiKey: 'sk-test',
          ...(oaiCap ? { maxConcurrent: oaiCap } : {}),
        },
        claude: { api: 'anthropic-messages', baseUrl: anthropic.url, apiKey: 'sk-ant-test' },
      },
    },
    agents: {
      defaults: { model, heartbeat: { every: '0' }, maxConcurrent: 4 },
      ...(withTools
        ? { list: [{ id: 'main', default: true, tools: { allow: ['repo.*'], maxSteps: 4 } }] }
        : {}),
    },
    ...(withTools
      ? { tools: { servers: { repo: { transport: 'stdio', command: ['node', 'repo.js'] } } } }
      : {}),
  });
  const loaded = loadConfigFile(path, process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  store = new SqliteStore({ path: join(dir, `${randomUUID()}.db`), synchronous: 'normal' });
  return loaded.config;
}

async function start(
  config: ResolvedConfig,
  pollMs?: number,
  claimHold?: () => ClaimHold | undefined,
  tools?: ToolSource,
): Promise<void> {
  clock = new ManualClock();
  logged = [];
  deferrals = [];
  limits = new ProviderLimits((p) => config.modelPolicy.providers.get(p)?.maxConcurrent, clock);
  worker = new RunWorker({
    store,
    config,
    models: new ModelRouter(config),
    limits,
    log: pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
    owner: OWNER,
    providerRetry: SHORT_RETRY,
    clock,
    ...(pollMs ? { pollMs } : {}),
    ...(claimHold ? { claimHold } : {}),
    ...(tools ? { tools, steps: store.steps } : {}),
    metrics: { runFinished() {}, runDeferred: (provider) => void deferrals.push(provider) },
  });
  await worker.start();
}

const viewOf = async (runId: string) => store.getRun(runId);
const statusOf = async (runId: string) => (await viewOf(runId))?.status;
const until = (runId: string, test: (view: Awaited<ReturnType<typeof viewOf>>) => boolean, what: string) =>
  waitFor(
    async () => {
      const view = await viewOf(runId);
      return view && test(view) ? view : undefined;
    },
    `run ${runId} ${what}`,
    10_000,
    5,
  );
const finished = (runId: string) =>
  until(runId, (v) => v?.status !== 'queued' && v?.status !== 'running', 'to finish');
const deferred = (runId: string) => until(runId, (v) => v?.notBefore != null, 'to be put back');

describe('maxConcurrent', () => {
  it("caps one provider's calls in flight: the runs beyond it stay queued, another provider's run goes through", async () => {
    const config = configured(OAI, 1);
    anthropic.script(['from claude']);
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await queueRun(store, { model: OAI, message: `oai ${i}` }));
    const other = await queueRun(store, { model: CLAUDE });
    await start(config);
    await held.received(1);
    expect((await finished(other.id)).status).toBe('succeeded');
    await clock.advance(5000); // polls come and go: the cap still holds
    const statuses = await Promise.all(runs.map((r) => statusOf(r.id)));
    expect(statuses.filter((s) => s === 'running')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'queued')).toHaveLength(2);
    expect(held.calls).toHaveLength(1);
    expect(limits.inFlight('oai')).toBe(1);

    for (let i = 1; i <= 3; i++) {
      const call = await held.received(i);
      expect(held.inFlight).toBe(1);
      call.answer(`reply ${i}`);
    }
    for (const run of runs) expect((await finished(run.id)).status).toBe('succeeded');
    expect(held.maxInFlight).toBe(1);
  });
});

describe('maxConcurrent and tool loops', () => {
  it('holds for each call of a loop: another run calls while one runs a tool, whose next call then waits', async () => {
    const config = configured(OAI, 1, true);
    let toolDone = () => {};
    const toolGate = new Promise<void>((resolve) => {
      toolDone = resolve;
    });
    const set = fakeToolSet({
      'repo.get': {
        answer: async () => {
          await toolGate;
          return { status: 'ok', text: 'PR 7' };
        },
      },
    });
    const tools: ToolSource = {
      async forRun(agentTools) {
        return agentTools ? { ...set, maxSteps: agentTools.maxSteps } : undefined;
      },
      async close() {},
    };
    const looping = await queueRun(store, { model: OAI, message: 'loop' });
    await start(config, undefined, undefined, tools);
    (await held.received(1)).answer({ toolCalls: [{ name: 'repo__get', arguments: {} }] });
    // Its tool runs: no call in flight, so the second run starts and calls.
    await waitFor(() => set.calls.length === 1 || undefined, 'the tool call');
    const other = await queueRun(store, { model: OAI, message: 'other' });
    const second = await held.received(2);
    expect(second.text).toContain('other');
    toolDone();
    // The loop's next call waits for the slot the other run's call holds.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(held.calls).toHaveLength(2);
    second.answer('other done');
    (await held.received(3)).answer('loop done');
    expect((await finished(looping.id)).reply).toBe('loop done');
    expect((await finished(other.id)).status).toBe('succeeded');
    expect(held.maxInFlight).toBe(1);
  });
});

describe('a 429 that outlasts the retries', () => {
  it("puts the run back queued with notBefore, holds the provider's other runs, and starts them when it passes", async () => {
    const config = configured(CLAUDE);
    anthropic.script([
      { status: 429, error: 'Number of requests has exceeded your rate limit', retryAfter: '120' },
      'ok',
    ]);
    const first = await queueRun(store, { timeoutSeconds: 600 });
    await start(config);
    const start0 = clock.now();
    const back = await deferred(first.id);
    expect(back).toMatchObject({ status: 'queued', error: null });
    expect(back.notBefore).toBe(new Date(start0 + 120_000).toISOString());
    // Not retried in the turn: the wait is longer than any retry's.
    expect(anthropic.requests).toHaveLength(1);
    expect(deferrals).toEqual(['claude']);
    expect(logged.find((l) => l.msg === 'provider rate limited; run put back in the queue')).toMatchObject({
      runId: first.id,
      provider: 'claude',
      heldMs: 120_000,
    });

    // The provider's other runs wait too, without calling it, and take no slot.
    const second = await queueRun(store, { timeoutSeconds: 600 });
    await clock.advance(60_000);
    // Held by the claims (never taken), not taken and put back in its turn.
    expect(await viewOf(second.id)).toMatchObject({ status: 'queued', notBefore: null, startedAt: null });
    expect(anthropic.requests).toHaveLength(1);
    expect(deferrals).toEqual(['claude']);

    // When the time comes, the worker's timer claims them again (no poll needed).
    await clock.advance(60_000);
    expect((await finished(first.id)).status).toBe('succeeded');
    expect((await finished(second.id)).status).toBe('succeeded');
    expect((await viewOf(first.id))?.notBefore).toBeNull();
    expect(anthropic.requests).toHaveLength(3);
  });

  it('a run deferred by another process starts at its notBefore, not at the next poll', async () => {
    const config = configured(CLAUDE);
    anthropic.script(['ok']);
    const run = await queueRun(store, { timeoutSeconds: 600 });
    const now = new ManualClock().now(); // the time the worker's clock starts at
    await store.runs.claimRuns('other-host:9:worker', now, 60_000, 1);
    expect(await store.runs.deferRun(run.id, 'other-host:9:worker', now + 5000, now)).toBe(true);
    await start(config, 600_000);
    await clock.advance(4999);
    expect(await statusOf(run.id)).toBe('queued');
    await clock.advance(1);
    expect((await finished(run.id)).status).toBe('succeeded');
  });

  it('falls back at once to a free provider, and the next runs skip the limited one', async () => {
    const config = configured({ primary: CLAUDE, fallbacks: [OAI] });
    anthropic.script([{ status: 429, error: 'rate limited', retryAfter: '300' }]);
    const first = await queueRun(store);
    await start(config);
    (await held.received(1)).answer('from oai');
    expect(await finished(first.id)).toMatchObject({ status: 'succeeded', model: OAI });
    const second = await queueRun(store);
    (await held.received(2)).answer('from oai again');
    expect((await finished(second.id)).status).toBe('succeeded');
    expect(anthropic.requests).toHaveLength(1);
    expect(deferrals).toEqual([]);
  });

  it('a run held back longer than its timeout in all fails rate_limited', async () => {
    const config = configured(CLAUDE);
    anthropic.script([{ status: 429, error: 'rate limited', retryAfter: '60' }]);
    const run = await queueRun(store, { timeoutSeconds: 100 });
    await start(config);
    await deferred(run.id);
    // Again 429 for 60 s when it comes back: 120 s held in all, more than its 100 s.
    await clock.advance(60_000);
    const done = await finished(run.id);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/^rate_limited: provider "claude" answered 429 /);
    expect(done.error).toContain('120 s in all, more than its timeout of 100 s');
    expect(anthropic.requests).toHaveLength(2);
    expect(deferrals).toEqual(['claude']);
  });
});

describe('other holds', () => {
  it("joins the worker's claimHold with the providers' hold: the runs either names stay queued", async () => {
    const config = configured(OAI, 1);
    const busy = await queueRun(store, { model: OAI });
    const fromHeld = await queueRun(store, { model: CLAUDE, source: 'hook:held' });
    const free = await queueRun(store, { model: CLAUDE });
    anthropic.script(['ok']);
    await start(config, undefined, () => ({ sources: ['hook:held'] }));
    await held.received(1);
    const waiting = await queueRun(store, { model: OAI });
    expect((await finished(free.id)).status).toBe('succeeded');
    await clock.advance(5000);
    expect(await statusOf(fromHeld.id)).toBe('queued');
    expect(await viewOf(waiting.id)).toMatchObject({ status: 'queued', startedAt: null });
    expect(await statusOf(busy.id)).toBe('running');
  });

  it('combineHolds joins the lists, and is undefined or the one hold when there is no other', () => {
    expect(combineHolds(undefined, {})).toBeUndefined();
    expect(combineHolds({ sources: ['a'] }, undefined)).toEqual({ sources: ['a'] });
    expect(combineHolds({ modelPrefixes: ['p/'], sources: ['a'] }, { sources: ['a', 'b'] })).toEqual({
      modelPrefixes: ['p/'],
      models: [],
      agentIdsWithoutModel: [],
      sources: ['a', 'b'],
      tokenIds: [],
      agentIds: [],
    });
  });
});

describe('config', () => {
  it('takes maxConcurrent on any provider entry, a positive integer, and names the key of a bad one', () => {
    const configDir = join(tempDir('agentgate-plimits-config-'), 'config');
    mkdirSync(configDir);
    const load = (maxConcurrent: unknown) =>
      loadConfigFile(
        writeConfig(configDir, {
          models: { providers: { echo: { api: 'echo', maxConcurrent } } },
          agents: { defaults: { model: 'echo/echo' } },
        }),
        process.env,
      );
    const good = load(3);
    expect(good.ok && good.config.modelPolicy.providers.get('echo')?.maxConcurrent).toBe(3);
    const bad = load(0);
    expect(bad.ok).toBe(false);
    expect(bad.ok ? '' : bad.problems.join('\n')).toContain('models.providers.echo.maxConcurrent');
    rmSync(join(configDir, '..'), { recursive: true, force: true });
  });
});

describe('ProviderLimits, the gate', () => {
  const never = new AbortController().signal;

  it('lets calls through up to the cap, the next in order as slots free up; an abort leaves the line', async () => {
    const gate = new ProviderLimits(() => 2, new ManualClock());
    const order: string[] = [];
    const a = await gate.acquire('p', never);
    const b = await gate.acquire('p', never);
    expect(gate.atCap('p')).toBe(true);
    const gone = new AbortController();
    const waiting = gate.acquire('p', gone.signal);
    const inLine = (name: string) =>
      gate.acquire('p', never).then((release) => {
        order.push(name);
        return release;
      });
    const c = inLine('c');
    const d = inLine('d');
    gone.abort(new Error('run timed out'));
    await expect(waiting).rejects.toThrow('run timed out');
    a();
    a(); // a second release frees nothing more
    await c;
    expect(order).toEqual(['c']);
    expect(gate.inFlight('p')).toBe(2);
    b();
    await d;
    expect(order).toEqual(['c', 'd']);
    // Another provider has its own slots; one without a cap has no limit.
    expect(gate.atCap('q')).toBe(false);
    const free = new ProviderLimits(() => undefined, new ManualClock());
    for (let i = 0; i < 10; i++) await free.acquire('p', never);
    expect(free.atCap('p')).toBe(false);
  });

  it('counts a reserved run toward the cap until its first call, and says when a capped provider frees up', async () => {
    const gate = new ProviderLimits(() => 1, new ManualClock());
    let freed = 0;
    gate.onFreed(() => freed++);
    const drop = gate.reserve('p');
    expect(gate.atCap('p')).toBe(true);
    const release = await gate.forRun(drop).acquire('p', never);
    expect(gate.atCap('p')).toBe(true);
    expect(gate.inFlight('p')).toBe(1);
    release();
    expect(freed).toBe(1);
    expect(gate.atCap('p')).toBe(false);
  });

  it('remembers a rate limit until its time on the clock', async () => {
    const clock = new ManualClock();
    const gate = new ProviderLimits(() => undefined, clock);
    gate.rateLimited('p', 30_000);
    gate.rateLimited('p', 10_000); // an earlier end does not shorten it
    expect(gate.limitedUntil('p')).toBe(clock.now() + 30_000);
    await clock.advance(30_000);
    expect(gate.limitedUntil('p')).toBeUndefined();
  });
});
