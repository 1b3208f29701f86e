/**
 * One Store conformance suite, the same tests for every driver (see drivers.ts):
 * accept, coalescing, idempotency, event paging, the run queue (leases, order
 * per session key, completion), sessions, heartbeats and the delivery outbox.
 * Drivers whose stores act as replicas (PostgreSQL) also run the cross-replica
 * tests: two stores on one database, as two replicas would be.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type {
  Action,
  Committed,
  IdempotencyClaim,
  NewRun,
  RunCompletion,
  Store,
  StoredAnswer,
} from '../../src/store/types.js';
import { DRIVERS } from './drivers.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const DAY = 24 * 3600_000;

let counter = 0;
const nextId = (prefix: string) => `${prefix}_${String(++counter).padStart(6, '0')}`;

function wake(
  text: string,
  sessionKey = MAIN,
  wakeMode: 'now' | 'next-heartbeat' = 'now',
  tokenId?: string | null,
): Action {
  return {
    kind: 'wake',
    event: { id: nextId('evt'), sessionKey, text, source: 'hook:wake', wakeMode, ts: T0, tokenId },
  };
}

function agent(overrides: Partial<NewRun> = {}): Action & { kind: 'agent' } {
  return {
    kind: 'agent',
    run: {
      id: nextId('run'),
      agentId: 'main',
      sessionKey: 'hook:ingress',
      mainSessionKey: MAIN,
      name: 'CI',
      message: 'build failed',
      model: null,
      thinking: null,
      timeoutSeconds: 600,
      wakeMode: 'now',
      deliver: false,
      channel: 'last',
      to: null,
      allowUnsafeExternalContent: false,
      source: 'hook:agent',
      createdAt: T0,
      ...overrides,
    },
  };
}

const render = (committed: Committed[]): StoredAnswer => ({ status: 200, body: JSON.stringify(committed) });
const claim = (key: string, bodyHash: string, now = T0, ttlMs = DAY): IdempotencyClaim => ({
  scope: '/hooks/agent',
  key,
  bodyHash,
  now,
  ttlMs,
});

function completion(
  run: { id: string; sessionKey: string },
  owner: string,
  over: Partial<RunCompletion> = {},
) {
  return {
    runId: run.id,
    owner,
    sessionKey: run.sessionKey,
    status: 'succeeded',
    reply: 'done',
    error: null,
    finishedAt: T0 + 5000,
    transcript: [
      { role: 'user', content: 'build failed' },
      { role: 'assistant', content: 'done' },
    ],
    summary: {
      id: nextId('evt'),
      sessionKey: MAIN,
      text: 'Hook CI: done',
      source: `run:${run.id}`,
      wakeMode: 'next-heartbeat',
      ts: T0 + 5000,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
    ...over,
  } satisfies RunCompletion;
}

describe.each(DRIVERS)('Store conformance: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  describe('accept', () => {
    it('commits wake events and runs in one call and shows them afterwards', async () => {
      const w = wake('disk full');
      const a = agent({ name: null, deliver: true, to: '+1555', model: 'echo/echo' });
      const result = await store.accept([w, a], render);
      expect(result.kind).toBe('committed');
      if (result.kind !== 'committed') return;
      expect(result.committed).toEqual([
        { kind: 'wake', eventId: (w as Action & { kind: 'wake' }).event.id, outcome: 'queued' },
        { kind: 'agent', runId: a.run.id },
      ]);
      expect(await store.listEvents(MAIN, { limit: 10 })).toEqual([
        {
          id: (w as Action & { kind: 'wake' }).event.id,
          ts: new Date(T0).toISOString(),
          text: 'disk full',
          source: 'hook:wake',
          status: 'pending',
          tokenId: null,
        },
      ]);
      expect(await store.getRun(a.run.id)).toEqual({
        runId: a.run.id,
        attachments: [],
        steps: 0,
        waitingFor: null,
        usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
        status: 'queued',
        agentId: 'main',
        sessionKey: 'hook:ingress',
        model: 'echo/echo',
        createdAt: new Date(T0).toISOString(),
        startedAt: null,
        finishedAt: null,
        notBefore: null,
        reply: null,
        error: null,
        delivery: { status: 'pending', channel: 'last', to: '+1555', reason: null },
        callback: { status: 'none', attempts: 0 },
        tokenId: null,
      });
    });

    it('records the hook token id with each run and event it accepts; null when absent', async () => {
      const tokened = wake('from ci', MAIN, 'now', 'ci-bot') as Action & { kind: 'wake' };
      const plain = wake('from nowhere', MAIN, 'now', null) as Action & { kind: 'wake' };
      const withToken = agent({ tokenId: 'ci-bot' });
      const withDefault = agent({ tokenId: 'default' });
      const withNull = agent({ tokenId: null });
      const without = agent();
      // One batch of accepts (group commit) and one accept of several actions.
      await Promise.all([
        store.accept([tokened, withToken], render),
        store.accept([withDefault], render),
        store.accept([plain, withNull, without], render),
      ]);
      expect((await store.getRun(withToken.run.id))?.tokenId).toBe('ci-bot');
      expect((await store.getRun(withDefault.run.id))?.tokenId).toBe('default');
      expect((await store.getRun(withNull.run.id))?.tokenId).toBeNull();
      expect((await store.getRun(without.run.id))?.tokenId).toBeNull();
      const events = (await store.listEvents(MAIN, { limit: 10 })) ?? [];
      expect(events.map((e) => [e.id, e.tokenId])).toEqual([
        [tokened.event.id, 'ci-bot'],
        [plain.event.id, null],
      ]);
      // The run list's views carry it too, and the inputs a retry copies (a retry then sets it null).
      const listed = (await store.admin.listRuns({ limit: 10 }))?.runs ?? [];
      expect(Object.fromEntries(listed.map((r) => [r.runId, r.tokenId]))).toEqual({
        [withToken.run.id]: 'ci-bot',
        [withDefault.run.id]: 'default',
        [withNull.run.id]: null,
        [without.run.id]: null,
      });
      expect((await store.admin.getStoredRun(withToken.run.id))?.run.tokenId).toBe('ci-bot');
      expect((await store.admin.getStoredRun(without.run.id))?.run.tokenId).toBeNull();
    });

    it('a run keeps its token id through its claim and completion; its summary event has none', async () => {
      const a = agent({ tokenId: 'ci-bot' });
      await store.accept([a], render);
      const [claimed] = await store.runs.claimRuns('w1', T0, 60_000, 1);
      expect(claimed?.id).toBe(a.run.id);
      const done = completion(a.run, 'w1');
      expect(await store.runs.completeRun(done)).toBe(true);
      expect(await store.getRun(a.run.id)).toMatchObject({ status: 'succeeded', tokenId: 'ci-bot' });
      const events = (await store.listEvents(MAIN, { limit: 10 })) ?? [];
      expect(events.map((e) => [e.id, e.tokenId])).toEqual([[done.summary.id, null]]);
    });

    it('a run and an event keep the traceparent they were accepted with, through the claim and the pending events (docs/tracing.md)', async () => {
      const parent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const traced = agent({ traceParent: parent });
      const untraced = agent({ sessionKey: 'hook:other', traceParent: null });
      const tracedEvent = wake('traced', MAIN);
      if (tracedEvent.kind === 'wake') tracedEvent.event.traceParent = parent;
      const plainEvent = wake('plain', 'agent:other:main');
      await store.accept([traced, untraced, tracedEvent, plainEvent], render);
      const claimed = await store.runs.claimRuns('w1', T0, 60_000, 4);
      expect(Object.fromEntries(claimed.map((r) => [r.id, r.traceParent]))).toEqual({
        [traced.run.id]: parent,
        [untraced.run.id]: null,
      });
      expect((await store.sessions.pendingEvents(MAIN, 10)).map((e) => e.traceParent)).toEqual([parent]);
      expect((await store.sessions.pendingEvents('agent:other:main', 10)).map((e) => e.traceParent)).toEqual([
        null,
      ]);
      expect((await store.admin.getStoredRun(traced.run.id))?.run.traceParent).toBe(parent);
    });

    it('a batch of concurrent accepts all commit, each with its own answer', async () => {
      const actions = Array.from({ length: 50 }, () => agent());
      const results = await Promise.all(actions.map((a) => store.accept([a], render)));
      expect(results.map((r) => r.kind)).toEqual(actions.map(() => 'committed'));
      for (const a of actions) expect((await store.getRun(a.run.id))?.status).toBe('queued');
    });

    it('writes nothing when an accept fails part-way, and the others of its batch still commit', async () => {
      const first = agent();
      await store.accept([first], render);
      const event = wake('must not survive');
      const good = agent();
      const [bad, fine] = await Promise.allSettled([
        store.accept([event, agent({ id: first.run.id })], render),
        store.accept([good], render),
      ]);
      expect(bad.status).toBe('rejected');
      expect((bad as PromiseRejectedResult).reason.name).toBe('StoreUnavailableError');
      expect(fine.status).toBe('fulfilled');
      expect(await store.listEvents(MAIN, { limit: 10 })).toEqual([]);
      expect((await store.getRun(good.run.id))?.status).toBe('queued');
    });

    it('records no idempotency key when rendering the answer fails', async () => {
      const failing = () => {
        throw new Error('render failed');
      };
      await expect(store.accept([wake('x')], failing, claim('k', 'h1'))).rejects.toThrow();
      expect(await store.listEvents(MAIN, { limit: 10 })).toEqual([]);
      expect((await store.accept([wake('x')], render, claim('k', 'h2'))).kind).toBe('committed');
    });

    it('fails with StoreUnavailableError once closed, and close can be called twice', async () => {
      await store.close();
      await expect(store.close()).resolves.toBeUndefined();
      await expect(store.accept([wake('late')], render)).rejects.toMatchObject({
        name: 'StoreUnavailableError',
      });
    });
  });

  describe('coalescing of wake events', () => {
    it('the same text as the newest pending event is coalesced; a different text or session is not', async () => {
      const first = await store.accept([wake('same')], render);
      const again = await store.accept([wake('same')], render);
      const other = await store.accept([wake('same', 'agent:other:main')], render);
      const firstId = first.kind === 'committed' && first.committed[0];
      expect(again).toMatchObject({ committed: [{ ...firstId, outcome: 'coalesced' }] });
      expect(other).toMatchObject({ committed: [{ outcome: 'queued' }] });
      await store.accept([wake('different')], render);
      expect(await store.accept([wake('same')], render)).toMatchObject({
        committed: [{ outcome: 'queued' }],
      });
    });

    it('coalesces within one batch, but not with a consumed event', async () => {
      const [a, b] = await Promise.all([
        store.accept([wake('x')], render),
        store.accept([wake('x')], render),
      ]);
      expect([a, b].map((r) => r.kind === 'committed' && r.committed[0])).toMatchObject([
        { outcome: 'queued' },
        { outcome: 'coalesced' },
      ]);
      const id = a.kind === 'committed' && a.committed[0]?.kind === 'wake' ? a.committed[0].eventId : '';
      expect(await store.consumeEvents(MAIN, [id], T0)).toBe(1);
      expect(await store.accept([wake('x')], render)).toMatchObject({ committed: [{ outcome: 'queued' }] });
    });
  });

  describe('idempotency', () => {
    it('replays the first answer for the same key and body, and does no new work', async () => {
      const first = await store.accept([agent()], render, claim('k1', 'h'));
      const second = await store.accept([agent()], render, claim('k1', 'h'));
      expect(first.kind).toBe('committed');
      expect(second).toEqual({ kind: 'replay', answer: (first as { answer: StoredAnswer }).answer });
    });

    it('reports a conflict for the same key with another body; keys are scoped by path', async () => {
      await store.accept([agent()], render, claim('k2', 'h'));
      expect(await store.accept([agent()], render, claim('k2', 'other'))).toEqual({ kind: 'conflict' });
      const elsewhere = { ...claim('k2', 'other'), scope: '/hooks/wake' };
      expect((await store.accept([wake('w')], render, elsewhere)).kind).toBe('committed');
    });

    it('forgets a key after ttlMs, and prunes records up to a time', async () => {
      await store.accept([agent()], render, claim('old', 'h', T0));
      await store.accept([agent()], render, claim('new', 'h', T0 + 10));
      expect((await store.accept([agent()], render, claim('old', 'h', T0 + DAY + 1))).kind).toBe('committed');
      expect(await store.pruneIdempotency(T0 + 10)).toBe(1);
      expect(await store.accept([agent()], render, claim('old', 'h', T0 + DAY + 2))).toMatchObject({
        kind: 'replay',
      });
    });

    it('the same key twice in one batch: the second replays the first', async () => {
      const [a, b] = await Promise.all([
        store.accept([agent()], render, claim('k3', 'h')),
        store.accept([agent()], render, claim('k3', 'h')),
      ]);
      expect(a.kind).toBe('committed');
      expect(b).toEqual({ kind: 'replay', answer: (a as { answer: StoredAnswer }).answer });
    });

    it('a key used before, several times in one batch: each use is judged against its first answer', async () => {
      const first = await store.accept([agent()], render, claim('k4', 'h'));
      const answer = (first as { answer: StoredAnswer }).answer;
      const results = await Promise.all([
        store.accept([agent()], render, claim('k4', 'other')),
        store.accept([agent()], render, claim('k4', 'h')),
        store.accept([wake('k4 wake')], render, claim('k4', 'h')),
        store.accept([agent()], render, claim('k5', 'h')),
        store.accept([agent()], render, claim('k5', 'other')),
      ]);
      expect(results.map((r) => r.kind)).toEqual(['conflict', 'replay', 'replay', 'committed', 'conflict']);
      expect(results[1]).toEqual({ kind: 'replay', answer });
      expect(results[2]).toEqual({ kind: 'replay', answer });
      // Replays did no work: no event for the replayed wake.
      expect((await store.listEvents(MAIN, { limit: 10 }))?.map((e) => e.text)).not.toContain('k4 wake');
    });
  });

  describe('listEvents paging', () => {
    it('returns the oldest first, honours limit, continues after an id, and knows unknown ids', async () => {
      for (const text of ['a', 'b', 'c', 'd']) await store.accept([wake(text)], render);
      const page1 = (await store.listEvents(MAIN, { limit: 2 })) ?? [];
      expect(page1.map((e) => e.text)).toEqual(['a', 'b']);
      const page2 = await store.listEvents(MAIN, { limit: 10, after: page1[1]?.id });
      expect(page2?.map((e) => e.text)).toEqual(['c', 'd']);
      expect(await store.listEvents(MAIN, { limit: 10, after: 'evt_nope' })).toBeUndefined();
      expect(await store.listEvents('agent:other:main', { limit: 10, after: page1[0]?.id })).toBeUndefined();
      expect(await store.getRun('run_nope')).toBeUndefined();
    });
  });

  describe('run queue', () => {
    it('claims the head of each key in acceptance order, the next only after completion', async () => {
      const hot = Array.from({ length: 30 }, () => agent({ sessionKey: 'hook:hot' }));
      await store.accept(hot, render);
      await store.accept([agent({ sessionKey: 'hook:other' })], render);
      const first = await store.runs.claimRuns('w1', T0, 60_000, 4);
      expect(first.map((r) => r.sessionKey)).toEqual(['hook:hot', 'hook:other']);
      expect(first[0]).toMatchObject({ id: hot[0]?.run.id, attempts: 1, startedAt: T0 });
      expect(await store.runs.claimRuns('w1', T0, 60_000, 4)).toEqual([]);
      expect(await store.runs.completeRun(completion(first[0] as NewRun, 'w1'))).toBe(true);
      const next = await store.runs.claimRuns('w1', T0 + 6000, 60_000, 4);
      expect(next.map((r) => r.id)).toEqual([hot[1]?.run.id]);
    });

    it('unfinishedRuns: of the ids asked, those queued or running, in one read (unknown ids are not)', async () => {
      const queued = agent({ sessionKey: 'hook:u1' });
      const running = agent({ sessionKey: 'hook:u2' });
      const finished = agent({ sessionKey: 'hook:u3' });
      await store.accept([queued, running, finished], render);
      const claimed = await store.runs.claimRuns('w1', T0, 60_000, 3);
      expect(claimed).toHaveLength(3);
      // Back to queued: a clean stop's hand-back.
      await store.runs.releaseRun(queued.run.id, 'w1');
      expect(await store.runs.completeRun(completion(finished.run, 'w1'))).toBe(true);
      const ids = [queued.run.id, running.run.id, finished.run.id, 'run_unknown'];
      expect(await store.unfinishedRuns(ids)).toEqual(new Set([queued.run.id, running.run.id]));
      expect(await store.unfinishedRuns([])).toEqual(new Set());
      // Many at once: one statement, no bound on how many ids it carries.
      const many = Array.from({ length: 2000 }, (_, i) => `run_many_${i}`);
      expect(await store.unfinishedRuns([...many, queued.run.id])).toEqual(new Set([queued.run.id]));
    });

    it('takes back a run whose lease expired; the old owner can then record nothing', async () => {
      await store.accept([agent({ sessionKey: 'hook:a' })], render);
      const [held] = await store.runs.claimRuns('w1', 1000, 10, 1);
      expect(await store.runs.claimRuns('w2', 1005, 10, 1)).toHaveLength(0);
      const [taken] = await store.runs.claimRuns('w2', 2000, 10, 1);
      expect(taken).toMatchObject({ id: held?.id, attempts: 2 });
      expect(await store.runs.completeRun(completion(held as NewRun, 'w1'))).toBe(false);
      expect(await store.runs.completeRun(completion(taken as NewRun, 'w2'))).toBe(true);
    });

    it('renewed leases are not taken; a released run is claimable again without counting an attempt', async () => {
      await store.accept([agent()], render);
      const [held] = await store.runs.claimRuns('w1', 1000, 100, 1);
      await store.runs.renewLeases('w1', [held?.id as string], 5000);
      expect(await store.runs.claimRuns('w2', 2000, 100, 1)).toEqual([]);
      expect(await store.runs.releaseRun(held?.id as string, 'w2')).toBe(false);
      expect(await store.runs.releaseRun(held?.id as string, 'w1')).toBe(true);
      expect((await store.runs.claimRuns('w2', 2000, 100, 1))[0]?.attempts).toBe(1);
    });

    it('completion records the run, its turn, its summary event and its delivery atomically', async () => {
      const a = agent({ deliver: true, channel: 'telegram', to: '42' });
      await store.accept([a], render);
      const [run] = await store.runs.claimRuns('w1', T0, 60_000, 1);
      const done = completion(run as NewRun, 'w1', {
        delivery: { status: 'pending', channel: 'telegram', to: '42', reason: null },
      });
      expect(await store.runs.completeRun(done)).toBe(true);
      expect(await store.getRun(a.run.id)).toMatchObject({
        status: 'succeeded',
        reply: 'done',
        startedAt: new Date(T0).toISOString(),
        finishedAt: new Date(T0 + 5000).toISOString(),
        delivery: { status: 'pending', channel: 'telegram', to: '42' },
      });
      expect(await store.sessions.loadTranscript('hook:ingress', 10)).toEqual(done.transcript);
      expect(await store.sessions.loadTranscript('hook:ingress', 1)).toEqual([done.transcript[1]]);
      expect((await store.sessions.pendingEvents(MAIN, 10)).map((e) => e.text)).toEqual(['Hook CI: done']);
      const [item] = await store.outbox.deliveryHeads(10);
      expect(item).toMatchObject({
        kind: 'run',
        refId: a.run.id,
        channel: 'telegram',
        to: '42',
        text: 'done',
      });
    });
  });

  describe('completions committed together (group commit)', () => {
    it('a batch records each run as its own completion would, and a lost lease records nothing of it', async () => {
      const keyed = [agent({ sessionKey: 'hook:k1' }), agent({ sessionKey: 'hook:k1' })];
      const others = [
        agent({ sessionKey: 'hook:k2', deliver: true, channel: 'telegram', to: '42' }),
        agent({ sessionKey: 'hook:k3' }),
        agent({ sessionKey: 'hook:k4' }),
      ];
      await store.accept([...keyed, ...others], render);
      const claimed = await store.runs.claimRuns('w1', T0, 60_000, 10);
      expect(claimed.map((r) => r.sessionKey).sort()).toEqual(['hook:k1', 'hook:k2', 'hook:k3', 'hook:k4']);
      const byKey = new Map(claimed.map((r) => [r.sessionKey, r]));
      // In one event-loop turn, so they share a transaction; w2 never held its run.
      const results = await Promise.all([
        store.runs.completeRun(completion(byKey.get('hook:k1') as NewRun, 'w1')),
        store.runs.completeRun(
          completion(byKey.get('hook:k2') as NewRun, 'w1', {
            delivery: { status: 'pending', channel: 'telegram', to: '42', reason: null },
          }),
        ),
        store.runs.completeRun(completion(byKey.get('hook:k3') as NewRun, 'w2')),
        store.runs.completeRun(
          completion(byKey.get('hook:k4') as NewRun, 'w1', { status: 'failed', reply: null }),
        ),
      ]);
      expect(results).toEqual([true, true, false, true]);
      expect((await store.getRun(byKey.get('hook:k3')?.id as string))?.status).toBe('running');
      expect((await store.getRun(byKey.get('hook:k4')?.id as string))?.status).toBe('failed');
      expect(await store.sessions.loadTranscript('hook:k1', 10)).toHaveLength(2);
      expect(await store.sessions.loadTranscript('hook:k3', 10)).toEqual([]);
      expect((await store.sessions.pendingEvents(MAIN, 10)).map((e) => e.source).sort()).toEqual(
        [keyed[0], others[0], others[2]].map((a) => `run:${a?.run.id}`).sort(),
      );
      expect((await store.outbox.deliveryHeads(10)).map((i) => i.refId)).toEqual([others[0]?.run.id]);
      // k1's next run moved up; the finished keys have nothing left.
      const next = await store.runs.claimRuns('w1', T0 + 6000, 60_000, 10);
      expect(next.map((r) => r.id)).toEqual([keyed[1]?.run.id]);
    });
  });

  describe('completeAndClaim: a completion fills the slot it frees in the same transaction', () => {
    it("claims the key's next run, fairly and within caps, as claimRuns would", async () => {
      const keyed = [agent({ sessionKey: 'hook:k' }), agent({ sessionKey: 'hook:k' })];
      await store.accept(keyed, render);
      const [first] = await store.runs.claimRuns('w1', T0, 60_000, 10);
      const outcome = await store.runs.completeAndClaim(completion(first as NewRun, 'w1'), {
        now: T0 + 5000,
        leaseMs: 60_000,
        limit: 1,
      });
      expect(outcome.recorded).toBe(true);
      expect(outcome.next.map((r) => r.id)).toEqual([keyed[1]?.run.id]);
      expect(outcome.next[0]).toMatchObject({ attempts: 1, startedAt: T0 + 5000 });
      expect((await store.getRun(keyed[1]?.run.id as string))?.status).toBe('running');
      // Nothing left: the next completion claims nothing, and says so.
      const last = await store.runs.completeAndClaim(completion(outcome.next[0] as NewRun, 'w1'), {
        now: T0 + 6000,
        leaseMs: 60_000,
        limit: 1,
      });
      expect(last).toEqual({ recorded: true, next: [] });
    });

    it('holds a capped source to its cap, and a lost lease still frees its slot', async () => {
      const capped = [
        agent({ source: 'hook:capped', sessionKey: 'hook:c1' }),
        agent({ source: 'hook:capped', sessionKey: 'hook:c2' }),
      ];
      await store.accept(capped, render);
      const caps = (source: string) => (source === 'hook:capped' ? 1 : undefined);
      const [held] = await store.runs.claimRuns('w1', T0, 60_000, 10, caps);
      await store.accept([agent({ source: 'hook:free', sessionKey: 'hook:f1' })], render);
      const [other] = await store.runs.claimRuns('w2', T0, 60_000, 1, caps);
      expect(other?.source).toBe('hook:free');
      // w2's completion may not take the capped source's second run while w1 runs one.
      const outcome = await store.runs.completeAndClaim(completion(other as NewRun, 'w2'), {
        now: T0 + 10,
        leaseMs: 60_000,
        limit: 1,
        caps,
      });
      expect(outcome).toEqual({ recorded: true, next: [] });
      // A completion whose lease was lost writes nothing, but its slot is still free.
      const lost = await store.runs.completeAndClaim(completion(held as NewRun, 'w9'), {
        now: T0 + 20,
        leaseMs: 60_000,
        limit: 1,
        caps,
      });
      expect(lost).toEqual({ recorded: false, next: [] });
      const done = await store.runs.completeAndClaim(completion(held as NewRun, 'w1'), {
        now: T0 + 30,
        leaseMs: 60_000,
        limit: 1,
        caps,
      });
      expect(done.recorded).toBe(true);
      expect(done.next.map((r) => r.id)).toEqual([capped[1]?.run.id]);
    });
  });

  describe('fair claims between hooks (sources) and per-source caps', () => {
    const flood = (n: number) =>
      Array.from({ length: n }, (_, i) => agent({ source: 'hook:flood', sessionKey: `hook:flood-${i}` }));

    it('a free slot goes to the source with the fewest running, so a flood never holds another back', async () => {
      const floodRuns = flood(40);
      await store.accept(floodRuns, render);
      const busy = await store.runs.claimRuns('w1', T0, 60_000, 4);
      expect(busy.map((r) => r.source)).toEqual(Array(4).fill('hook:flood'));
      const lone = agent({ source: 'hook:other', sessionKey: 'hook:lone' });
      await store.accept([lone], render);
      // All slots busy: nothing until one frees up, then the other hook's run takes it.
      expect(await store.runs.completeRun(completion(busy[0] as NewRun, 'w1'))).toBe(true);
      const next = await store.runs.claimRuns('w1', T0 + 1, 60_000, 1);
      expect(next.map((r) => r.id)).toEqual([lone.run.id]);
      // With slots for both, they alternate: the fewest running first, the oldest head on a tie.
      await store.accept([agent({ source: 'hook:other', sessionKey: 'hook:lone2' })], render);
      const both = await store.runs.claimRuns('w2', T0 + 2, 60_000, 4);
      expect(both.map((r) => r.source)).toEqual(['hook:other', 'hook:flood', 'hook:flood', 'hook:flood']);
      expect(both.slice(1).map((r) => r.id)).toEqual(floodRuns.slice(4, 7).map((a) => a.run.id));
    });

    it('a capped source runs at most its cap, counted over every owner; an expired lease does not count', async () => {
      const caps = (source: string) => (source === 'hook:flood' ? 2 : undefined);
      await store.accept([...flood(6), agent({ source: 'hook:free', sessionKey: 'hook:free' })], render);
      const first = await store.runs.claimRuns('w1', T0, 1000, 10, caps);
      expect(first.map((r) => r.source).sort()).toEqual(['hook:flood', 'hook:flood', 'hook:free']);
      expect(await store.runs.claimRuns('w2', T0 + 10, 1000, 10, caps)).toEqual([]);
      const capped = first.filter((r) => r.source === 'hook:flood');
      expect(await store.runs.completeRun(completion(capped[0] as NewRun, 'w1'))).toBe(true);
      const after = await store.runs.claimRuns('w2', T0 + 20, 1000, 10, caps);
      expect(after.map((r) => r.source)).toEqual(['hook:flood']);
      // Every lease expired: those runs are claimable again and no longer count as running.
      const retaken = await store.runs.claimRuns('w3', T0 + 2000, 1000, 10, caps);
      expect(retaken.map((r) => r.source).sort()).toEqual(['hook:flood', 'hook:flood', 'hook:free']);
      expect(retaken.map((r) => r.id)).toContain(capped[1]?.id);
    });

    it('runs sharing a session key still run one at a time and in order, whatever their sources', async () => {
      const runs = [
        agent({ source: 'hook:a', sessionKey: 'hook:shared' }),
        agent({ source: 'hook:b', sessionKey: 'hook:shared' }),
        agent({ source: 'hook:a', sessionKey: 'hook:shared' }),
      ];
      await store.accept(runs, render);
      for (const [index, expected] of runs.entries()) {
        const claimed = await store.runs.claimRuns('w1', T0 + index, 60_000, 4);
        expect(claimed.map((r) => r.id)).toEqual([expected.run.id]);
        expect(await store.runs.completeRun(completion(claimed[0] as NewRun, 'w1'))).toBe(true);
      }
      expect(await store.runs.claimRuns('w1', T0 + 9, 60_000, 4)).toEqual([]);
    });

    it('with a backlog of 2000 heads on one source, a claim still reads only a few of them', async () => {
      await store.accept(flood(2000), render);
      await store.accept([agent({ source: 'hook:other', sessionKey: 'hook:late' })], render);
      const started = performance.now();
      const claimed = await store.runs.claimRuns('w1', T0, 60_000, 2);
      const elapsed = performance.now() - started;
      expect(claimed.map((r) => r.source)).toEqual(['hook:flood', 'hook:other']);
      // Generous: scanning the backlog would not fail this on a fast machine, but reading
      // it on every claim shows up as a few hundred ms on a loaded one.
      expect(elapsed).toBeLessThan(1000);
    });
  });

  describe('sessions and heartbeats', () => {
    it('lists sessions awaiting a heartbeat; a succeeded heartbeat consumes its events and appends its turn', async () => {
      await store.accept([wake('now one'), wake('later', 'agent:b:main', 'next-heartbeat')], render);
      expect(await store.sessions.sessionsAwaitingHeartbeat()).toEqual([MAIN]);
      const events = await store.sessions.pendingEvents(MAIN, 10);
      await store.sessions.setRoute(MAIN, { channel: 'telegram', to: '7' }, T0);
      await store.sessions.recordHeartbeat({
        id: 'hb_1',
        sessionKey: MAIN,
        startedAt: T0,
        finishedAt: T0 + 100,
        status: 'succeeded',
        eventIds: events.map((e) => e.id),
        reply: 'all good',
        error: null,
        transcript: [{ role: 'assistant', content: 'all good' }],
        delivery: { status: 'pending', channel: 'last', to: null, reason: null },
        traceParent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      });
      expect(await store.sessions.sessionsAwaitingHeartbeat()).toEqual([]);
      expect(await store.sessions.loadTranscript(MAIN, 10)).toEqual([
        { role: 'assistant', content: 'all good' },
      ]);
      expect(await store.sessions.listHeartbeats(MAIN, 10)).toEqual([
        {
          id: 'hb_1',
          startedAt: new Date(T0).toISOString(),
          finishedAt: new Date(T0 + 100).toISOString(),
          status: 'succeeded',
          eventCount: 1,
          reply: 'all good',
          error: null,
          delivery: { status: 'pending', channel: 'last', to: null, reason: null },
          usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
        },
      ]);
      expect(await store.sessions.getRoute(MAIN)).toEqual({ channel: 'telegram', to: '7' });
      expect(await store.sessions.getRoute('agent:none:main')).toBeUndefined();
      // Its reply's delivery continues the heartbeat's trace (docs/tracing.md).
      expect((await store.outbox.deliveryHeads(10))[0]).toMatchObject({
        kind: 'heartbeat',
        refId: 'hb_1',
        traceParent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      });
    });
  });

  describe('delivery outbox', () => {
    async function pendingDelivery(to: string, text: string) {
      const a = agent({ deliver: true, channel: 'telegram', to, sessionKey: `hook:${text}` });
      await store.accept([a], render);
      const [run] = await store.runs.claimRuns('w1', T0, 60_000, 1);
      await store.runs.completeRun(
        completion(run as NewRun, 'w1', {
          reply: text,
          delivery: { status: 'pending', channel: 'telegram', to, reason: null },
        }),
      );
      return a.run.id;
    }

    it('keeps replies to one recipient in order, records parts, retries and finishes', async () => {
      const r1 = await pendingDelivery('9', 'first');
      await pendingDelivery('9', 'second');
      let heads = await store.outbox.deliveryHeads(10);
      expect(heads.map((h) => h.text)).toEqual(['first', 'second']); // routes not fixed yet
      const [first] = heads;
      if (!first) throw new Error('no head');
      await store.outbox.resolveDelivery(first.id, { channel: 'telegram', to: '9' }, T0 + 1);
      await store.outbox.resolveDelivery(
        (heads[1] as typeof first).id,
        { channel: 'telegram', to: '9' },
        T0 + 1,
      );
      heads = await store.outbox.deliveryHeads(10);
      expect(heads.map((h) => h.text)).toEqual(['first']); // the second waits behind it
      await store.outbox.markPartsSent(first.id, 2, T0 + 2);
      await store.outbox.retryDelivery(
        { ...first, resolved: { channel: 'telegram', to: '9' } },
        1,
        T0 + 50,
        'boom',
        T0 + 3,
      );
      expect((await store.getRun(r1))?.delivery.reason).toBe('attempt 1 failed (boom); retrying');
      heads = await store.outbox.deliveryHeads(10);
      expect(heads[0]).toMatchObject({ id: first.id, partsSent: 2, attempts: 1, nextAttemptAt: T0 + 50 });
      const record = { status: 'delivered' as const, channel: 'telegram', to: '9', reason: null };
      await store.outbox.finishDelivery(heads[0] as typeof first, record, T0 + 60);
      expect((await store.getRun(r1))?.delivery).toEqual(record);
      expect(await store.sessions.getRoute(MAIN)).toEqual({ channel: 'telegram', to: '9' });
      expect((await store.outbox.deliveryHeads(10)).map((h) => h.text)).toEqual(['second']);
    });
  });

  describe('counts (metrics gauges)', () => {
    it('counts queued and running runs and pending deliveries as the work moves through', async () => {
      expect(await store.counts()).toEqual({ runsQueued: 0, runsRunning: 0, deliveriesPending: 0 });
      const a = agent({ sessionKey: 'hook:k1', deliver: true, channel: 'telegram', to: '9' });
      const b = agent({ sessionKey: 'hook:k1' });
      const c = agent({ sessionKey: 'hook:k2' });
      await store.accept([a, b, c, wake('not a run')], render);
      expect(await store.counts()).toEqual({ runsQueued: 3, runsRunning: 0, deliveriesPending: 0 });

      const claimed = await store.runs.claimRuns('w1', T0, 60_000, 10); // the heads of k1 and k2
      expect(claimed.map((run) => run.id).sort()).toEqual([a.run.id, c.run.id].sort());
      expect(await store.counts()).toEqual({ runsQueued: 1, runsRunning: 2, deliveriesPending: 0 });

      await store.runs.completeRun(
        completion(a.run, 'w1', {
          delivery: { status: 'pending', channel: 'telegram', to: '9', reason: null },
        }),
      );
      await store.runs.completeRun(completion(c.run, 'w1', { status: 'failed', reply: null, error: 'boom' }));
      expect(await store.counts()).toEqual({ runsQueued: 1, runsRunning: 0, deliveriesPending: 1 });

      const [head] = await store.outbox.deliveryHeads(10);
      if (!head) throw new Error('no delivery head');
      const record = { status: 'failed' as const, channel: 'telegram', to: '9', reason: 'gone' };
      await store.outbox.finishDelivery(
        { ...head, resolved: { channel: 'telegram', to: '9' } },
        record,
        T0 + 10,
      );
      expect(await store.counts()).toEqual({ runsQueued: 1, runsRunning: 0, deliveriesPending: 0 });
    });
  });

  describe("operators' API", () => {
    /** Accepts a run and, unless `over` is null, claims and completes it at once (it is the only one runnable). */
    async function run(overrides: Partial<NewRun> = {}, over: Partial<RunCompletion> | null = {}) {
      const a = agent({ sessionKey: `hook:${nextId('k')}`, ...overrides });
      await store.accept([a], render);
      if (over === null) return a.run;
      const [claimed] = await store.runs.claimRuns('w1', T0, 60_000, 1);
      expect(claimed?.id).toBe(a.run.id);
      expect(await store.runs.completeRun(completion(a.run, 'w1', over))).toBe(true);
      return a.run;
    }
    const ids = (page: { runs: { runId: string }[] } | undefined) => page?.runs.map((r) => r.runId);

    it('listRuns: newest first, RunView plus source, name and retryOf; pages strictly older with before', async () => {
      const runs = [];
      for (let i = 0; i < 5; i++) runs.push(await run({ name: `n${i}` }, null));
      const newestFirst = runs.map((r) => r.id).reverse();
      const all = await store.admin.listRuns({ limit: 50 });
      expect(ids(all)).toEqual(newestFirst);
      expect(all?.next).toBeNull();
      const { source, name, retryOf, ...view } = all?.runs[0] ?? {};
      expect({ source, name, retryOf }).toEqual({ source: 'hook:agent', name: 'n4', retryOf: null });
      expect(view).toEqual(await store.getRun(runs[4]?.id as string));

      const page1 = await store.admin.listRuns({ limit: 2 });
      expect(ids(page1)).toEqual(newestFirst.slice(0, 2));
      expect(page1?.next).toBe(newestFirst[1]);
      const page2 = await store.admin.listRuns({ limit: 2, before: page1?.next as string });
      expect(ids(page2)).toEqual(newestFirst.slice(2, 4));
      const page3 = await store.admin.listRuns({ limit: 2, before: page2?.next as string });
      expect(page3).toMatchObject({ next: null });
      expect(ids(page3)).toEqual(newestFirst.slice(4));
      expect(await store.admin.listRuns({ limit: 1, before: runs[0]?.id })).toEqual({ runs: [], next: null });
      expect(await store.admin.listRuns({ limit: 10, before: 'run_nope' })).toBeUndefined();
    });

    it('listRuns: filters by each status and by source, together too', async () => {
      const ok = await run({}, {});
      const failed = await run({}, { status: 'failed', reply: null, error: 'x' });
      const timedOut = await run({ source: 'hook:github' }, { status: 'timed_out', reply: null, error: 't' });
      const running = await run({ source: 'hook:github' }, null);
      await store.runs.claimRuns('w1', T0, 60_000, 1);
      const queued = await run({ source: 'hook:github' }, null);
      const list = async (options: Parameters<Store['admin']['listRuns']>[0]) =>
        ids(await store.admin.listRuns(options));
      expect(await list({ limit: 10, status: 'succeeded' })).toEqual([ok.id]);
      expect(await list({ limit: 10, status: 'failed' })).toEqual([failed.id]);
      expect(await list({ limit: 10, status: 'timed_out' })).toEqual([timedOut.id]);
      expect(await list({ limit: 10, status: 'running' })).toEqual([running.id]);
      expect(await list({ limit: 10, status: 'queued' })).toEqual([queued.id]);
      expect(await list({ limit: 10, source: 'hook:github' })).toEqual([queued.id, running.id, timedOut.id]);
      expect(await list({ limit: 10, source: 'hook:github', status: 'timed_out' })).toEqual([timedOut.id]);
      expect(await list({ limit: 10, source: 'hook:agent', status: 'timed_out' })).toEqual([]);
      const page = await store.admin.listRuns({ limit: 1, source: 'hook:github' });
      expect(page?.next).toBe(queued.id);
      expect(ids(await store.admin.listRuns({ limit: 5, source: 'hook:github', before: queued.id }))).toEqual(
        [running.id, timedOut.id],
      );
    });

    it('listRuns: filters by token id, pages strictly older with before, together with status and source', async () => {
      const ci1 = await run({ tokenId: 'ci-bot' }, {});
      const other = await run({ tokenId: 'grafana' }, {});
      const ci2 = await run(
        { tokenId: 'ci-bot', source: 'hook:github' },
        { status: 'failed', reply: null, error: 'x' },
      );
      const none = await run({}, {});
      const ci3 = await run({ tokenId: 'ci-bot' }, null);
      const dflt = await run({ tokenId: 'default' }, null);
      const list = async (options: Parameters<Store['admin']['listRuns']>[0]) =>
        ids(await store.admin.listRuns(options));
      expect(await list({ limit: 10, token: 'ci-bot' })).toEqual([ci3.id, ci2.id, ci1.id]);
      expect(await list({ limit: 10, token: 'grafana' })).toEqual([other.id]);
      expect(await list({ limit: 10, token: 'default' })).toEqual([dflt.id]);
      expect(await list({ limit: 10, token: 'nobody' })).toEqual([]);
      // A run accepted without a token is only in the unfiltered list.
      expect(await list({ limit: 10 })).toContain(none.id);
      expect(await list({ limit: 10, token: 'ci-bot', status: 'failed' })).toEqual([ci2.id]);
      expect(await list({ limit: 10, token: 'ci-bot', status: 'queued' })).toEqual([ci3.id]);
      expect(await list({ limit: 10, token: 'ci-bot', status: 'succeeded' })).toEqual([ci1.id]);
      expect(await list({ limit: 10, token: 'grafana', status: 'failed' })).toEqual([]);
      expect(await list({ limit: 10, token: 'ci-bot', source: 'hook:github' })).toEqual([ci2.id]);
      expect(await list({ limit: 10, token: 'grafana', source: 'hook:github' })).toEqual([]);

      const page1 = await store.admin.listRuns({ limit: 2, token: 'ci-bot' });
      expect(ids(page1)).toEqual([ci3.id, ci2.id]);
      expect(page1?.next).toBe(ci2.id);
      const page2 = await store.admin.listRuns({ limit: 2, token: 'ci-bot', before: page1?.next as string });
      expect(page2).toMatchObject({ next: null });
      expect(ids(page2)).toEqual([ci1.id]);
      // `before` may name a run of another token (or none): the page is the older runs of this one.
      expect(await list({ limit: 10, token: 'ci-bot', before: dflt.id })).toEqual([ci3.id, ci2.id, ci1.id]);
      expect(await list({ limit: 10, token: 'ci-bot', before: none.id })).toEqual([ci2.id, ci1.id]);
      expect(await store.admin.listRuns({ limit: 10, token: 'ci-bot', before: 'run_nope' })).toBeUndefined();
      const [view] = (await store.admin.listRuns({ limit: 1, token: 'grafana' }))?.runs ?? [];
      expect(view).toMatchObject({ runId: other.id, tokenId: 'grafana', status: 'succeeded' });
    });

    it('getStoredRun: the inputs as accepted and the status; a retry committed by accept names its original', async () => {
      const original = await run(
        {
          deliver: true,
          channel: 'telegram',
          to: '42',
          model: 'echo/echo',
          thinking: 'low',
          timeoutSeconds: 30,
          tokenId: 'ci-bot',
        },
        { status: 'failed', reply: null, error: 'x' },
      );
      const stored = await store.admin.getStoredRun(original.id);
      expect(stored?.status).toBe('failed');
      expect(stored?.run).toEqual({ ...original, callbackUrl: null, retryOf: null, traceParent: null });
      expect(stored?.run.tokenId).toBe('ci-bot');
      expect(await store.admin.getStoredRun('run_nope')).toBeUndefined();

      // As POST /api/runs/{id}/retry builds it: the inputs, but no hook token (the operator's run).
      const retry = {
        ...(stored?.run as NewRun),
        id: nextId('run'),
        createdAt: T0 + 1,
        retryOf: original.id,
        tokenId: null,
      };
      expect((await store.accept([{ kind: 'agent', run: retry }], render)).kind).toBe('committed');
      expect(await store.admin.getStoredRun(retry.id)).toEqual({
        run: retry,
        status: 'queued',
        attachments: [],
      });
      const [newest] = (await store.admin.listRuns({ limit: 1 }))?.runs ?? [];
      expect(newest).toMatchObject({
        runId: retry.id,
        retryOf: original.id,
        status: 'queued',
        tokenId: null,
      });
      expect((await store.getRun(retry.id))?.tokenId).toBeNull();
      expect(ids(await store.admin.listRuns({ limit: 10, token: 'ci-bot' }))).toEqual([original.id]);
    });

    it('redeliverRun: not_found, nothing_to_deliver, delivery_pending, then a new outbox item to the fixed route', async () => {
      expect(await store.admin.redeliverRun('run_nope', T0)).toBe('not_found');
      const queued = await run({ deliver: true, channel: 'telegram', to: '9' }, null);
      expect(await store.admin.redeliverRun(queued.id, T0)).toBe('nothing_to_deliver'); // no reply yet
      const [claimed] = await store.runs.claimRuns('w1', T0, 60_000, 1);
      await store.runs.completeRun(
        completion(claimed as NewRun, 'w1', {
          delivery: { status: 'pending', channel: 'last', to: null, reason: null },
        }),
      );
      expect(await store.admin.redeliverRun(queued.id, T0)).toBe('delivery_pending');
      const silent = await run({ deliver: false }, {});
      expect(await store.admin.redeliverRun(silent.id, T0)).toBe('nothing_to_deliver');
      // deliver true, but nothing ever went to the outbox (a heartbeat acknowledgement).
      const ack = await run(
        { deliver: true },
        { delivery: { status: 'skipped', channel: null, to: null, reason: 'ack' } },
      );
      expect(await store.admin.redeliverRun(ack.id, T0)).toBe('nothing_to_deliver');

      const [first] = await store.outbox.deliveryHeads(10);
      if (!first) throw new Error('no outbox item');
      await store.outbox.resolveDelivery(first.id, { channel: 'telegram', to: '9' }, T0 + 1);
      const resolved = { ...first, resolved: { channel: 'telegram', to: '9' } };
      await store.outbox.retryDelivery(resolved, 1, T0 + 2, 'timeout', T0 + 1);
      const failed = { status: 'failed' as const, channel: 'telegram', to: '9', reason: 'chat not found' };
      await store.outbox.finishDelivery({ ...resolved, attempts: 1 }, failed, T0 + 3);
      expect(await store.outbox.deliveryHeads(10)).toEqual([]);

      expect(await store.admin.redeliverRun(queued.id, T0 + 10)).toBe('enqueued');
      expect((await store.getRun(queued.id))?.delivery).toEqual({
        status: 'pending',
        channel: 'telegram',
        to: '9',
        reason: null,
      });
      const [again] = await store.outbox.deliveryHeads(10);
      expect(again).toMatchObject({
        kind: 'run',
        refId: queued.id,
        text: 'done',
        resolved: { channel: 'telegram', to: '9' },
        partsSent: 0,
        attempts: 0,
        nextAttemptAt: T0 + 10,
      });
      expect(again?.id).not.toBe(first.id);
      expect(await store.admin.redeliverRun(queued.id, T0 + 11)).toBe('delivery_pending');
    });

    it('listDeliveries: newest first, status filters (skipped shows as failed), attempts, heartbeat replies', async () => {
      const delivered = await run(
        { deliver: true, channel: 'telegram', to: '1' },
        { delivery: { status: 'pending', channel: 'telegram', to: '1', reason: null } },
      );
      const [item] = await store.outbox.deliveryHeads(10);
      if (!item) throw new Error('no outbox item');
      await store.outbox.resolveDelivery(item.id, { channel: 'telegram', to: '1' }, T0 + 1);
      const record = { status: 'delivered' as const, channel: 'telegram', to: '1', reason: null };
      await store.outbox.finishDelivery(
        { ...item, resolved: { channel: 'telegram', to: '1' } },
        record,
        T0 + 2,
      );

      const skipped = await run(
        { deliver: true, channel: 'last' },
        { delivery: { status: 'pending', channel: 'last', to: null, reason: null } },
      );
      const [unrouted] = await store.outbox.deliveryHeads(10);
      if (!unrouted) throw new Error('no outbox item');
      const noRoute = {
        status: 'skipped' as const,
        channel: 'last',
        to: null,
        reason: 'no recipient for last',
      };
      await store.outbox.finishDelivery(unrouted, noRoute, T0 + 3);

      await store.sessions.recordHeartbeat({
        id: 'hb_admin',
        sessionKey: MAIN,
        startedAt: T0,
        finishedAt: T0 + 4,
        status: 'succeeded',
        eventIds: [],
        reply: 'beat',
        error: null,
        transcript: [],
        delivery: { status: 'pending', channel: 'last', to: null, reason: null },
      });

      const all = await store.admin.listDeliveries({ limit: 10 });
      expect(all).toEqual([
        {
          id: expect.stringMatching(/^dlv_/),
          runId: null,
          heartbeatId: 'hb_admin',
          channel: 'last',
          to: null,
          status: 'pending',
          attempts: 0,
          lastError: null,
          createdAt: new Date(T0 + 4).toISOString(),
          updatedAt: new Date(T0 + 4).toISOString(),
        },
        {
          id: unrouted.id,
          runId: skipped.id,
          heartbeatId: null,
          channel: 'last',
          to: null,
          status: 'failed',
          attempts: 0,
          lastError: 'no recipient for last',
          createdAt: new Date(T0 + 5000).toISOString(),
          updatedAt: new Date(T0 + 3).toISOString(),
        },
        {
          id: item.id,
          runId: delivered.id,
          heartbeatId: null,
          channel: 'telegram',
          to: '1',
          status: 'delivered',
          attempts: 1,
          lastError: null,
          createdAt: new Date(T0 + 5000).toISOString(),
          updatedAt: new Date(T0 + 2).toISOString(),
        },
      ]);
      const list = async (status?: 'pending' | 'delivered' | 'failed', limit = 10) =>
        (await store.admin.listDeliveries({ status, limit })).map((d) => d.id);
      expect(await list('pending')).toEqual([all[0]?.id]);
      expect(await list('failed')).toEqual([unrouted.id]);
      expect(await list('delivered')).toEqual([item.id]);
      expect(await list(undefined, 2)).toEqual([all[0]?.id, unrouted.id]);
    });

    describe('listRetryableRuns (bulk retry)', () => {
      const fail = (finishedAt: number, status: 'failed' | 'timed_out' = 'failed') => ({
        status,
        reply: null,
        error: 'x',
        finishedAt,
      });
      const retryIds = (found: { runs: { run: { id: string } }[] }) => found.runs.map((r) => r.run.id);

      it('matches finished runs of one status, by source and finish window, oldest finished first; limit caps the runs, not matched', async () => {
        const late = await run({}, fail(T0 + 3000));
        const early = await run(
          { source: 'hook:github', callbackUrl: 'https://example.com/cb' },
          fail(T0 + 1000),
        );
        const middle = await run({}, fail(T0 + 2000));
        const timedOut = await run({ source: 'hook:github' }, fail(T0 + 1500, 'timed_out'));
        await run({}, {}); // succeeded
        await run({}, null); // queued
        const find = (options: Partial<Parameters<Store['admin']['listRetryableRuns']>[0]> = {}) =>
          store.admin.listRetryableRuns({ status: 'failed', limit: 100, ...options });

        const all = await find();
        expect(all.matched).toBe(3);
        expect(retryIds(all)).toEqual([early.id, middle.id, late.id]);
        // The inputs as getStoredRun reads them, the callback URL included.
        expect(all.runs[0]).toEqual(await store.admin.getStoredRun(early.id));
        expect(all.runs[0]?.run.callbackUrl).toBe('https://example.com/cb');

        expect(await find({ status: 'timed_out' })).toMatchObject({ matched: 1 });
        expect(retryIds(await find({ status: 'timed_out' }))).toEqual([timedOut.id]);
        expect(retryIds(await find({ source: 'hook:github' }))).toEqual([early.id]);
        expect(await find({ source: 'hook:nope' })).toEqual({ matched: 0, runs: [] });
        // since is inclusive, until exclusive.
        expect(retryIds(await find({ since: T0 + 2000 }))).toEqual([middle.id, late.id]);
        expect(retryIds(await find({ until: T0 + 2000 }))).toEqual([early.id]);
        expect(retryIds(await find({ since: T0 + 1000, until: T0 + 3000 }))).toEqual([early.id, middle.id]);
        const limited = await find({ limit: 2 });
        expect(limited.matched).toBe(3);
        expect(retryIds(limited)).toEqual([early.id, middle.id]);
      });

      it('a run some run retries is not matched again; a failed retry is, itself', async () => {
        const first = await run({}, fail(T0 + 1000));
        const second = await run({}, fail(T0 + 2000));
        const found = await store.admin.listRetryableRuns({ status: 'failed', limit: 1 });
        expect(retryIds(found)).toEqual([first.id]);
        // As POST /api/runs/retry commits it: through accept, naming the run it retries.
        const retry = {
          ...(found.runs[0]?.run as NewRun),
          id: nextId('run'),
          retryOf: first.id,
          tokenId: null,
        };
        await store.accept([{ kind: 'agent', run: retry }], render);
        const again = await store.admin.listRetryableRuns({ status: 'failed', limit: 100 });
        expect(again).toMatchObject({ matched: 1 });
        expect(retryIds(again)).toEqual([second.id]);

        const [claimed] = await store.runs.claimRuns('w1', T0, 60_000, 1);
        expect(claimed?.id).toBe(retry.id);
        await store.runs.completeRun(completion(retry, 'w1', fail(T0 + 4000)));
        expect(retryIds(await store.admin.listRetryableRuns({ status: 'failed', limit: 100 }))).toEqual([
          second.id,
          retry.id,
        ]);
      });

      it('only reads: asking twice (a dry run) finds the same runs and changes no run', async () => {
        await run({}, fail(T0 + 1000));
        await run({}, fail(T0 + 2000, 'timed_out'));
        const before = await store.admin.listRuns({ limit: 50 });
        const once = await store.admin.listRetryableRuns({ status: 'failed', limit: 100 });
        const twice = await store.admin.listRetryableRuns({ status: 'failed', limit: 100 });
        expect(twice).toEqual(once);
        expect(once.matched).toBe(1);
        expect(await store.admin.listRuns({ limit: 50 })).toEqual(before);
        expect(await store.counts()).toMatchObject({ runsQueued: 0, runsRunning: 0 });
      });
    });

    it('ping answers while open and fails with StoreUnavailableError once closed', async () => {
      await expect(store.admin.ping()).resolves.toBeUndefined();
      await store.close();
      await expect(store.admin.ping()).rejects.toMatchObject({ name: 'StoreUnavailableError' });
    });
  });

  describe.runIf(driver.replicas)('across replicas (two stores on one database)', () => {
    it('the same idempotency key sent to two replicas at once yields one run, the same runId', async () => {
      const other = driver.open();
      for (let i = 0; i < 20; i++) {
        const key = `race-${i}`;
        const [a, b] = await Promise.all([
          store.accept([agent()], render, claim(key, 'h')),
          other.accept([agent()], render, claim(key, 'h')),
        ]);
        const kinds = [a.kind, b.kind].sort();
        expect(kinds).toEqual(['committed', 'replay']);
        const answerOf = (r: typeof a) => (r.kind === 'conflict' ? undefined : r.answer);
        expect(answerOf(a)).toEqual(answerOf(b));
      }
    });

    it('concurrent claims from two replicas never take the same run, nor two runs of one key', async () => {
      const other = driver.open();
      const keys = ['hook:k1', 'hook:k2', 'hook:k3', 'hook:k4'];
      await store.accept(
        keys.flatMap((sessionKey) => [agent({ sessionKey }), agent({ sessionKey })]),
        render,
      );
      const [mine, theirs] = await Promise.all([
        store.runs.claimRuns('r1', T0, 60_000, 10),
        other.runs.claimRuns('r2', T0, 60_000, 10),
      ]);
      const claimed = [...mine, ...theirs];
      expect(new Set(claimed.map((r) => r.id)).size).toBe(claimed.length);
      expect(claimed.map((r) => r.sessionKey).sort()).toEqual(keys);
    });

    it('two replicas claiming at once never run more of a capped source than its cap', async () => {
      const other = driver.open();
      const caps = (source: string) => (source === 'hook:capped' ? 3 : undefined);
      await store.accept(
        Array.from({ length: 12 }, (_, i) => agent({ source: 'hook:capped', sessionKey: `hook:c${i}` })),
        render,
      );
      const claims = await Promise.all([
        store.runs.claimRuns('r1', T0, 60_000, 10, caps),
        other.runs.claimRuns('r2', T0, 60_000, 10, caps),
        store.runs.claimRuns('r3', T0, 60_000, 10, caps),
        other.runs.claimRuns('r4', T0, 60_000, 10, caps),
      ]);
      expect(claims.flat()).toHaveLength(3);
    });

    it('a run held by a replica that died is taken over by another once its lease expires', async () => {
      const other = driver.open();
      const a = agent();
      await store.accept([a], render);
      await store.runs.claimRuns('dead-replica', T0, 60_000, 1);
      expect(await other.runs.claimRuns('r2', T0 + 59_000, 60_000, 1)).toEqual([]);
      const [taken] = await other.runs.claimRuns('r2', T0 + 60_001, 60_000, 1);
      expect(taken).toMatchObject({ id: a.run.id, attempts: 2 });
    });

    it('a run committed on one replica wakes the other through LISTEN/NOTIFY, once per batch', async () => {
      const other = driver.open();
      let woken = 0;
      let resolveWoken: () => void = () => {};
      const wokenOnce = new Promise<void>((resolve) => {
        resolveWoken = resolve;
      });
      other.committed.on('runs', () => {
        woken++;
        resolveWoken();
      });
      await (other as { listening?: () => Promise<void> }).listening?.();
      const started = performance.now();
      await Promise.all(Array.from({ length: 20 }, () => store.accept([agent()], render)));
      await wokenOnce;
      const latencyMs = performance.now() - started;
      expect(latencyMs).toBeLessThan(1000);
      expect(woken).toBeGreaterThanOrEqual(1);
      expect(woken).toBeLessThan(20); // one NOTIFY per group commit, not per row
    });

    it('one heartbeat lease per main session: taken by one replica until released or expired', async () => {
      const other = driver.open();
      const [mine, theirs] = await Promise.all([
        store.sessions.acquireHeartbeatLease(MAIN, 'r1', T0, T0 + 1000),
        other.sessions.acquireHeartbeatLease(MAIN, 'r2', T0, T0 + 1000),
      ]);
      expect([mine, theirs].sort()).toEqual([false, true]);
      const [holder, holderStore, waiter, waiterStore] = mine
        ? ['r1', store, 'r2', other]
        : ['r2', other, 'r1', store];
      expect(await waiterStore.sessions.acquireHeartbeatLease('agent:b:main', waiter, T0, T0 + 1000)).toBe(
        true,
      );
      expect(await waiterStore.sessions.acquireHeartbeatLease(MAIN, waiter, T0 + 999, T0 + 2000)).toBe(false);
      await holderStore.sessions.releaseHeartbeatLease(MAIN, holder);
      expect(await waiterStore.sessions.acquireHeartbeatLease(MAIN, waiter, T0 + 999, T0 + 2000)).toBe(true);
      expect(await holderStore.sessions.acquireHeartbeatLease(MAIN, holder, T0 + 2001, T0 + 3000)).toBe(true); // expired
    });

    it('a pending delivery is handed to one replica at a time, and to another when its lease expires', async () => {
      let now = T0 + 5000; // when the reply below is enqueued
      const clock = () => now;
      const one = driver.open({ clock, deliveryLeaseMs: 1000 });
      const two = driver.open({ clock, deliveryLeaseMs: 1000 });
      await store.accept([agent({ deliver: true, channel: 'telegram', to: '5' })], render);
      const [run] = await store.runs.claimRuns('w', T0, 60_000, 1);
      await store.runs.completeRun(
        completion(run as NewRun, 'w', {
          delivery: { status: 'pending', channel: 'telegram', to: '5', reason: null },
        }),
      );
      const [a, b] = await Promise.all([one.outbox.deliveryHeads(10), two.outbox.deliveryHeads(10)]);
      expect(a.length + b.length).toBe(1);
      const [holder, waiting] = a.length === 1 ? [one, two] : [two, one];
      expect(await holder.outbox.deliveryHeads(10)).toHaveLength(1); // still its own
      now += 999;
      expect(await waiting.outbox.deliveryHeads(10)).toEqual([]);
      now += 2;
      expect(await waiting.outbox.deliveryHeads(10)).toHaveLength(1); // the holder died
    });
  });
});
