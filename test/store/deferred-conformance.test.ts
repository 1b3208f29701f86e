/**
 * Store conformance for runs held back (docs/agent-runs.md, "Provider limits"), the same tests
 * for every driver (drivers.ts): `deferRun` puts a leased run back until a time — queued, not an
 * attempt, its held time counted, `notBefore` on its view, surviving a reopen — and no claim
 * takes it before then; a claim's `hold` leaves the runs it names queued. Neither deferred nor
 * held heads use up a claim's reads of their source, so the source's other runs still start.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimHold, NewRun, RunCompletion, Store } from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';
import { newRunFactory } from './new-runs.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const LEASE = 60_000;
const { nextId, newRun: agent } = newRunFactory('df', T0);

function completion(run: { id: string; sessionKey: string }, finishedAt: number): RunCompletion {
  return {
    runId: run.id,
    owner: 'w1',
    sessionKey: run.sessionKey,
    status: 'succeeded',
    reply: 'done',
    error: null,
    finishedAt,
    transcript: [],
    summary: {
      id: nextId('evt'),
      sessionKey: MAIN,
      text: 'Hook: done',
      source: `run:${run.id}`,
      wakeMode: 'next-heartbeat',
      ts: finishedAt,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
  };
}

describe.each(DRIVERS)('Store conformance, deferred and held runs: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  const accept = async (...runs: NewRun[]) => {
    const actions = runs.map((run) => ({ kind: 'agent' as const, run }));
    const result = await store.accept(actions, () => ({ status: 202, body: '{}' }));
    expect(result.kind).toBe('committed');
  };
  const claimIds = async (now: number, limit: number, hold?: ClaimHold, owner = 'w1') =>
    (await store.runs.claimRuns(owner, now, LEASE, limit, undefined, hold)).map((r) => r.id);

  describe('deferRun', () => {
    it('puts the run back queued until notBefore, not as an attempt, its held time counted', async () => {
      const run = agent();
      await accept(run);
      const [claimed] = await store.runs.claimRuns('w1', T0, LEASE, 1);
      expect(claimed).toMatchObject({ id: run.id, attempts: 1, heldMs: 0 });
      expect(await store.runs.deferRun(run.id, 'w2', T0 + 30_000, T0 + 1000)).toBe(false);
      expect(await store.runs.deferRun(run.id, 'w1', T0 + 30_000, T0 + 1000)).toBe(true);
      expect(await store.getRun(run.id)).toMatchObject({
        status: 'queued',
        notBefore: new Date(T0 + 30_000).toISOString(),
      });
      // Its lease is gone too: deferring it again needs a new lease.
      expect(await store.runs.deferRun(run.id, 'w1', T0 + 40_000, T0 + 1000)).toBe(false);
      expect(await store.runs.nextNotBefore(T0 + 1000)).toBe(T0 + 30_000);
      expect(await claimIds(T0 + 29_999, 4)).toEqual([]);

      const [again] = await store.runs.claimRuns('w1', T0 + 30_000, LEASE, 4);
      expect(again).toMatchObject({ id: run.id, attempts: 1, heldMs: 29_000 });
      // The lease clears it: notBefore is shown only while the run waits.
      expect((await store.getRun(run.id))?.notBefore).toBeNull();
      expect(await store.runs.nextNotBefore(T0 + 30_000)).toBeNull();

      // A second deferral adds to the held time.
      expect(await store.runs.deferRun(run.id, 'w1', T0 + 35_000, T0 + 31_000)).toBe(true);
      const [third] = await store.runs.claimRuns('w1', T0 + 35_000, LEASE, 4);
      expect(third).toMatchObject({ id: run.id, attempts: 1, heldMs: 33_000 });
      expect(await store.runs.completeRun(completion(run, T0 + 36_000))).toBe(true);
      expect(await store.getRun(run.id)).toMatchObject({ status: 'succeeded', notBefore: null });
    });

    it('nextNotBefore: the earliest deferral still ahead, none once it passed', async () => {
      const [a, b] = [agent(), agent()];
      await accept(a, b);
      await store.runs.claimRuns('w1', T0, LEASE, 2);
      expect(await store.runs.nextNotBefore(T0)).toBeNull();
      await store.runs.deferRun(a.id, 'w1', T0 + 9000, T0);
      await store.runs.deferRun(b.id, 'w1', T0 + 5000, T0);
      expect(await store.runs.nextNotBefore(T0)).toBe(T0 + 5000);
      expect(await store.runs.nextNotBefore(T0 + 5000)).toBe(T0 + 9000);
      expect(await store.runs.nextNotBefore(T0 + 9000)).toBeNull();
    });

    it("a deferred run keeps its session key's place: the key's next run waits behind it", async () => {
      const first = agent({ sessionKey: 'hook:same' });
      const second = agent({ sessionKey: 'hook:same' });
      await accept(first, second);
      expect(await claimIds(T0, 4)).toEqual([first.id]);
      await store.runs.deferRun(first.id, 'w1', T0 + 10_000, T0);
      expect(await claimIds(T0 + 1, 4)).toEqual([]);
      expect(await claimIds(T0 + 10_000, 4)).toEqual([first.id]);
    });

    it("many deferred heads of a source do not use up the claim's reads: its other runs start", async () => {
      const deferred = Array.from({ length: 6 }, () => agent());
      await accept(...deferred);
      expect(await claimIds(T0, 6)).toHaveLength(6);
      for (const run of deferred) await store.runs.deferRun(run.id, 'w1', T0 + 60_000, T0);
      const later = agent();
      await accept(later);
      expect(await claimIds(T0 + 1, 1)).toEqual([later.id]);
      // Also when the claim holds runs (the held claim's own statement).
      const latest = agent({ model: 'oai/gpt-5-mini' });
      await accept(latest);
      expect(await claimIds(T0 + 2, 1, { modelPrefixes: ['claude/'] })).toEqual([latest.id]);
    });

    it('a completion claiming for its slot leaves deferred runs too', async () => {
      const [done, deferred] = [agent(), agent()];
      await accept(done, deferred);
      await store.runs.claimRuns('w1', T0, LEASE, 2);
      await store.runs.deferRun(deferred.id, 'w1', T0 + 60_000, T0);
      const outcome = await store.runs.completeAndClaim(completion(done, T0 + 10), {
        now: T0 + 10,
        leaseMs: LEASE,
        limit: 1,
      });
      expect(outcome).toMatchObject({ recorded: true, next: [] });
    });

    it('a deferred run survives the store being closed and opened again', async () => {
      const run = agent();
      await accept(run);
      await store.runs.claimRuns('w1', T0, LEASE, 1);
      await store.runs.deferRun(run.id, 'w1', T0 + 20_000, T0 + 2000);
      await store.close();
      store = driver.open();
      expect(await store.getRun(run.id)).toMatchObject({
        status: 'queued',
        notBefore: new Date(T0 + 20_000).toISOString(),
      });
      expect(await store.runs.nextNotBefore(T0 + 2000)).toBe(T0 + 20_000);
      expect(await claimIds(T0 + 19_000, 4, undefined, 'w9')).toEqual([]);
      const [back] = await store.runs.claimRuns('w9', T0 + 20_000, LEASE, 4);
      expect(back).toMatchObject({ id: run.id, attempts: 1, heldMs: 18_000 });
    });
  });

  describe('a claim hold', () => {
    it('leaves queued the runs it names, by model, agent, source or token; the others start', async () => {
      const claude = agent({ model: 'claude/claude-sonnet-4-5' });
      const aliased = agent({ model: 'fast' });
      const defaulted = agent({ agentId: 'ops', model: null });
      const openai = agent({ model: 'oai/gpt-5-mini' });
      const unnamed = agent({ model: null });
      await accept(claude, aliased, defaulted, openai, unnamed);
      const byModel: ClaimHold = {
        modelPrefixes: ['claude/'],
        models: ['fast'],
        agentIdsWithoutModel: ['ops'],
      };
      expect((await claimIds(T0, 10, byModel)).sort()).toEqual([openai.id, unnamed.id].sort());
      expect(await claimIds(T0, 10, byModel)).toEqual([]);
      expect((await claimIds(T0, 10)).sort()).toEqual([claude.id, aliased.id, defaulted.id].sort());
    });

    it('sources, token ids and agent ids hold their runs; an empty hold holds nothing', async () => {
      const fromHook = agent({ source: 'hook:github' });
      const fromToken = agent({ tokenId: 'ci' });
      const ofAgent = agent({ agentId: 'ops', model: 'oai/gpt-5-mini' });
      const free = agent({ tokenId: 'other' });
      await accept(fromHook, fromToken, ofAgent, free);
      const hold: ClaimHold = { sources: ['hook:github'], tokenIds: ['ci'], agentIds: ['ops'] };
      expect(await claimIds(T0, 10, hold)).toEqual([free.id]);
      expect((await claimIds(T0, 10, {})).sort()).toEqual([fromHook.id, fromToken.id, ofAgent.id].sort());
    });

    it("many held heads of a source do not use up the claim's reads: its other runs start", async () => {
      const held = Array.from({ length: 8 }, () => agent({ model: 'claude/claude-sonnet-4-5' }));
      const free = agent({ model: 'oai/gpt-5-mini' });
      await accept(...held, free);
      expect(await claimIds(T0, 1, { modelPrefixes: ['claude/'] })).toEqual([free.id]);
    });

    it('a completion claiming for its slot holds the same runs', async () => {
      const done = agent();
      const held = agent({ model: 'claude/claude-sonnet-4-5' });
      const free = agent({ model: 'oai/gpt-5-mini' });
      await accept(done);
      await store.runs.claimRuns('w1', T0, LEASE, 1);
      await accept(held, free);
      const outcome = await store.runs.completeAndClaim(completion(done, T0 + 10), {
        now: T0 + 10,
        leaseMs: LEASE,
        limit: 2,
        hold: { modelPrefixes: ['claude/'] },
      });
      expect(outcome.next.map((r) => r.id)).toEqual([free.id]);
    });
  });
});
