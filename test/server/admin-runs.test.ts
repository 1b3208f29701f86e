/**
 * The operators' run routes over real HTTP (docs/operating.md, "Admin API"): GET
 * /api/runs (order, paging, filters, refused parameters), POST
 * /api/runs/{id}/retry and /redeliver, POST /api/runs/retry (bulk), GET /api/deliveries. Runs are made by
 * posting real hooks; the worker is off, and a run is finished (or held) through
 * the gateway's own store, so each state is reached deterministically. One test
 * runs the workers to see a retry actually execute. Every test runs on SQLite and
 * on PostgreSQL.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NewRun, RunCompletion, Store } from '../../src/store/types.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import {
  ADMIN_TOKEN,
  type Answer,
  HOOK_TOKEN,
  readAnswer,
  startTestGateway,
  type TestGateway,
} from '../helpers/gateway.js';
import { sharedTestDatabase } from '../helpers/pg-database.js';
import { waitFor } from '../helpers/wait.js';
import { expectError, expectInvalidPayload } from '../ingress/support.js';
import { PG_ENABLED } from '../store/drivers.js';

const TELEGRAM = { botToken: '123456:TEST-token', apiBaseUrl: 'http://127.0.0.1:9' };

const STORES = PG_ENABLED ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
let storeKind: (typeof STORES)[number] = 'sqlite';
// One database for the file, emptied before each test that starts a gateway on it.
const database = sharedTestDatabase();
let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.stop();
  gw = undefined;
});
afterAll(() => database.drop());

/** A gateway on the store under test (PostgreSQL: the file's database, its tables emptied first). */
async function start(workers = false, telegram = TELEGRAM): Promise<TestGateway> {
  const url = storeKind === 'postgres' ? await database.fresh() : undefined;
  gw = await startTestGateway(
    {
      store: url ? { driver: 'postgres', url } : undefined,
      hooks: {
        allowRequestSessionKey: true,
        mappings: [
          { id: 'ci', match: { path: 'ci' }, action: 'agent', messageTemplate: 'CI: {{text}}', name: 'CI' },
        ],
      },
      channels: { telegram },
    },
    { inject: true, workers },
  );
  return gw;
}

async function post(path: string, token = ADMIN_TOKEN): Promise<Answer> {
  return readAnswer(
    await fetch(`${gw?.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` } }),
  );
}

async function agentRun(body: Record<string, unknown> = {}): Promise<string> {
  const answer = await gw?.hook('agent', { message: 'hello', deliver: false, ...body });
  expect(answer?.status, answer?.text).toBe(202);
  return answer?.body.runId as string;
}

/**
 * A run accepted straight through the gateway's store with a hook token id, as the ingress
 * commits one (docs/senders.md); its session key is its own.
 */
async function tokenRun(store: Store, tokenId: string | null, source = 'hook:agent'): Promise<string> {
  const id = `run_token_${Math.random().toString(36).slice(2)}`;
  const run: NewRun = {
    id,
    agentId: 'main',
    sessionKey: `hook:${id}`,
    mainSessionKey: 'agent:main:main',
    name: null,
    message: 'from a sender',
    model: null,
    thinking: null,
    timeoutSeconds: 60,
    wakeMode: 'now',
    deliver: false,
    channel: 'last',
    to: null,
    allowUnsafeExternalContent: false,
    source,
    createdAt: Date.now(),
    tokenId,
  };
  const result = await store.accept([{ kind: 'agent', run }], () => ({ status: 202, body: '{}' }));
  expect(result.kind).toBe('committed');
  return id;
}

/** Claims the one queued run in the store and records how it ended. */
async function finish(store: Store, runId: string, over: Partial<RunCompletion> = {}): Promise<void> {
  const [claimed] = await store.runs.claimRuns('test-owner', Date.now(), 60_000, 1);
  expect(claimed?.id).toBe(runId);
  const completion: RunCompletion = {
    runId,
    owner: 'test-owner',
    sessionKey: claimed?.sessionKey as string,
    status: 'succeeded',
    reply: 'the reply',
    error: null,
    finishedAt: Date.now(),
    transcript: [],
    summary: {
      id: `evt_summary_${runId}`,
      sessionKey: 'agent:main:main',
      text: 'Hook: the reply',
      source: `run:${runId}`,
      wakeMode: 'next-heartbeat',
      ts: Date.now(),
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
    ...over,
  };
  expect(await store.runs.completeRun(completion)).toBe(true);
}

describe.each(STORES)('on %s', (kind) => {
  beforeAll(() => {
    storeKind = kind;
  });

  describe('GET /api/runs', () => {
    it('lists runs newest first with source, name and retryOf, and pages strictly older with before', async () => {
      const g = await start();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push(await agentRun({ name: `n${i}`, sessionKey: `hook:s${i}` }));
      const mapped = await g.hook('ci', { text: 'red' });
      expect(mapped.status, mapped.text).toBe(202);
      ids.push(mapped.body.runId);

      const all = await g.admin('/api/runs');
      expect(all.status, all.text).toBe(200);
      expect(all.body.next).toBeNull();
      expect(all.body.runs.map((r: { runId: string }) => r.runId)).toEqual([...ids].reverse());
      expect(all.body.runs[0]).toMatchObject({
        source: 'hook:ci',
        name: 'CI',
        retryOf: null,
        status: 'queued',
      });
      expect(all.body.runs[1]).toMatchObject({
        runId: ids[2],
        source: 'hook:agent',
        name: 'n2',
        retryOf: null,
        sessionKey: 'hook:s2',
        delivery: { status: 'none' },
      });
      // GET /api/runs/{id} is the list's entry plus the message as received.
      const one = await g.admin(`/api/runs/${ids[2]}`);
      const { message, ...listed } = one.body;
      expect(listed).toEqual(all.body.runs[1]);
      expect(message).toBe('hello');

      const page1 = await g.admin('/api/runs?limit=2');
      expect(page1.body.runs.map((r: { runId: string }) => r.runId)).toEqual([ids[3], ids[2]]);
      expect(page1.body.next).toBe(ids[2]);
      const page2 = await g.admin(`/api/runs?limit=2&before=${page1.body.next}`);
      expect(page2.body.runs.map((r: { runId: string }) => r.runId)).toEqual([ids[1], ids[0]]);
      expect(page2.body.next).toBeNull(); // exactly two were left: no empty last page
      const last = await g.admin(`/api/runs?before=${ids[0]}`);
      expect(last.body).toEqual({ runs: [], next: null });
    });

    it('filters by status and by source', async () => {
      const g = await start();
      const failed = await agentRun({ sessionKey: 'hook:f' });
      await finish(g.gateway.store, failed, { status: 'failed', reply: null, error: 'model down' });
      const queued = await agentRun({ sessionKey: 'hook:q' });
      const mapped = (await g.hook('ci', { text: 'x' })).body.runId;

      const ids = async (query: string) =>
        (await g.admin(`/api/runs?${query}`)).body.runs.map((r: { runId: string }) => r.runId);
      expect(await ids('status=failed')).toEqual([failed]);
      expect(await ids('status=queued')).toEqual([mapped, queued]);
      expect(await ids('status=succeeded')).toEqual([]);
      expect(await ids('status=timed_out')).toEqual([]);
      expect(await ids('source=hook:ci')).toEqual([mapped]);
      expect(await ids('source=hook:agent&status=queued')).toEqual([queued]);
      expect(await ids('source=hook:nothing')).toEqual([]);
      const failedView = (await g.admin('/api/runs?status=failed')).body.runs[0];
      expect(failedView).toMatchObject({ status: 'failed', error: 'model down', reply: null });
    });

    it('filters by hook token id with ?tokenId=, pages with before, and shows each run’s tokenId', async () => {
      const g = await start();
      const store = g.gateway.store;
      const ci1 = await tokenRun(store, 'ci-bot');
      const grafana = await tokenRun(store, 'grafana');
      const ci2 = await tokenRun(store, 'ci-bot', 'hook:ci');
      const none = await tokenRun(store, null);
      const ci3 = await tokenRun(store, 'ci-bot');

      const list = async (query: string) => {
        const answer = await g.admin(`/api/runs?${query}`);
        expect(answer.status, answer.text).toBe(200);
        return answer.body;
      };
      const ids = async (query: string) => (await list(query)).runs.map((r: { runId: string }) => r.runId);
      expect(await ids('tokenId=ci-bot')).toEqual([ci3, ci2, ci1]);
      expect(await ids('tokenId=grafana')).toEqual([grafana]);
      expect(await ids('tokenId=nobody')).toEqual([]);
      expect(await ids('tokenId=ci-bot&source=hook:ci')).toEqual([ci2]);
      expect(await ids('tokenId=ci-bot&status=queued&limit=10')).toEqual([ci3, ci2, ci1]);
      const page1 = await list('tokenId=ci-bot&limit=2');
      expect(page1.runs.map((r: { runId: string }) => r.runId)).toEqual([ci3, ci2]);
      expect(page1.next).toBe(ci2);
      expect(await list(`tokenId=ci-bot&limit=2&before=${page1.next}`)).toMatchObject({ next: null });
      expect(await ids(`tokenId=ci-bot&limit=2&before=${page1.next}`)).toEqual([ci1]);

      const all = await list('limit=10');
      const tokens = Object.fromEntries(
        all.runs.map((r: { runId: string; tokenId: string | null }) => [r.runId, r.tokenId]),
      );
      expect(tokens).toMatchObject({ [ci1]: 'ci-bot', [grafana]: 'grafana', [none]: null, [ci3]: 'ci-bot' });
      // GET /api/runs/{id} and the hook token's GET {hooks.path}/runs/{id} show it as well.
      expect((await g.admin(`/api/runs/${grafana}`)).body.tokenId).toBe('grafana');
      const followed = await readAnswer(
        await fetch(`${g.url}/hooks/runs/${grafana}`, {
          headers: { authorization: `Bearer ${HOOK_TOKEN}` },
        }),
      );
      expect(followed.status, followed.text).toBe(200);
      expect(followed.body.tokenId).toBe('grafana');
      expect((await g.admin(`/api/runs/${none}`)).body.tokenId).toBeNull();
    });

    it('with ?view=summary, a page of runs with 320 KiB replies is a few KiB of excerpts; the run itself has its reply whole', async () => {
      const g = await start();
      const store = g.gateway.store;
      const RUNS = 30;
      const reply = (i: number) =>
        `Report ${i}: all green\n\n${'Every check passed; nothing needs a look. '.repeat(8000)}`;
      const ids: string[] = [];
      for (let i = 0; i < RUNS; i++) {
        const id = await agentRun({ sessionKey: `hook:big${i}` });
        await finish(store, id, { reply: reply(i) });
        ids.push(id);
      }
      expect(reply(0).length).toBeGreaterThan(320 * 1024);
      const failed = await agentRun({ sessionKey: 'hook:bigfail' });
      await finish(store, failed, {
        status: 'failed',
        reply: null,
        error: `model down\n${'at x\n'.repeat(9000)}`,
      });

      const summary = await g.admin(`/api/runs?view=summary&limit=${RUNS + 1}`);
      expect(summary.status, summary.text).toBe(200);
      // About 1 KiB a run, whatever the size of its reply.
      expect(Buffer.byteLength(summary.text)).toBeLessThan((RUNS + 1) * 1536);
      const [failedRun, ...succeeded] = summary.body.runs;
      expect(failedRun).toMatchObject({ runId: failed, replyExcerpt: null, errorExcerpt: 'model down…' });
      expect(succeeded.map((r: { runId: string }) => r.runId)).toEqual([...ids].reverse());
      expect(succeeded[0]).toMatchObject({
        runId: ids[RUNS - 1],
        status: 'succeeded',
        source: 'hook:agent',
        retryOf: null,
        replyExcerpt: `Report ${RUNS - 1}: all green…`,
        errorExcerpt: null,
        delivery: { status: 'none' },
      });
      for (const run of summary.body.runs) {
        expect(run).not.toHaveProperty('reply');
        expect(run).not.toHaveProperty('error');
      }
      // The run's own page has it whole, and so has the list without the view (a RunView each).
      expect((await g.admin(`/api/runs/${ids[0]}`)).body.reply).toBe(reply(0));
      const full = await g.admin(`/api/runs?limit=2&before=${ids[2]}`);
      expect(full.body.runs.map((r: { reply: string }) => r.reply)).toEqual([reply(1), reply(0)]);
      expect((await g.admin(`/api/runs?view=full&limit=1`)).body.runs[0].error).toBe(
        `model down\n${'at x\n'.repeat(9000)}`,
      );
      // Pages and filters as the list does.
      const page = await g.admin(`/api/runs?view=summary&status=succeeded&limit=2&before=${ids[5]}`);
      expect(page.body.runs.map((r: { runId: string }) => r.runId)).toEqual([ids[4], ids[3]]);
      expect(page.body.next).toBe(ids[3]);
    }, 60_000);

    it('refuses a bad limit, status or before with 400 invalid_payload naming the parameter', async () => {
      const g = await start();
      const id = await agentRun();
      for (const limit of ['0', '1001', 'abc', '1.5', '-1', '', '1e2', '1&limit=2']) {
        expectInvalidPayload(await g.admin(`/api/runs?limit=${limit}`), 'limit');
      }
      for (const status of ['bogus', 'QUEUED', '', 'queued&status=failed']) {
        expectInvalidPayload(await g.admin(`/api/runs?status=${status}`), 'status');
      }
      for (const before of ['run_unknown', '', `${id}&before=${id}`]) {
        expectInvalidPayload(await g.admin(`/api/runs?before=${before}`), 'before');
      }
      expectInvalidPayload(await g.admin('/api/runs?source='), 'source');
      for (const view of ['', 'SUMMARY', 'lean', 'summary&view=full']) {
        expectInvalidPayload(await g.admin(`/api/runs?view=${view}`), 'view');
      }
      // A token id is 1-64 of [a-z0-9_-], as hooks.tokens[].id (docs/senders.md).
      for (const tokenId of ['', 'CI', 'ci%20bot', 'ci.bot', 'x'.repeat(65), 'a&tokenId=b', '%C3%A9']) {
        expectInvalidPayload(await g.admin(`/api/runs?tokenId=${tokenId}`), 'tokenId');
      }
      expect((await g.admin(`/api/runs?tokenId=${'x'.repeat(64)}`)).status).toBe(200);
      expect((await g.admin('/api/runs?tokenId=ci_bot-2')).status).toBe(200);
      // `token` itself reads as a credential in the URL, refused before anything else.
      expectError(await g.admin('/api/runs?token=ci-bot'), 400, 'token_in_query');
      expect((await g.admin('/api/runs?limit=1000')).status).toBe(200);
      expect((await g.admin(`/api/runs?limit=1&before=${id}`)).body).toEqual({ runs: [], next: null });
    });

    it('takes the admin token only, before any parameter is looked at', async () => {
      const g = await start();
      expectError(await readAnswer(await fetch(`${g.url}/api/runs?limit=0`)), 401, 'unauthorized');
      const withHookToken = await g.admin('/api/runs', {
        authorization: 'Bearer hook-token-0123456789abcdef0123456789',
      });
      expectError(withHookToken, 401, 'unauthorized');
      expectError(await post('/api/runs/x/retry', 'wrong'), 401, 'unauthorized');
    });
  });

  describe('POST /api/runs/{runId}/retry', () => {
    it('is 404 not_found for an unknown run, 409 run_not_finished while queued or running', async () => {
      const g = await start();
      expectError(await post('/api/runs/run_unknown/retry'), 404, 'not_found');
      const id = await agentRun();
      const queued = await post(`/api/runs/${id}/retry`);
      expectError(queued, 409, 'run_not_finished');
      expect(queued.body.error).toContain('queued');
      await g.gateway.store.runs.claimRuns('holder', Date.now(), 60_000, 1);
      const running = await post(`/api/runs/${id}/retry`);
      expectError(running, 409, 'run_not_finished');
      expect(running.body.error).toContain('running');
      expect((await g.admin('/api/runs')).body.runs).toHaveLength(1); // nothing was made
    });

    it('commits a new run with the same inputs, naming the run it retries', async () => {
      const g = await start();
      const id = await agentRun({
        message: 'try me',
        name: 'Job',
        sessionKey: 'hook:job',
        deliver: true,
        channel: 'telegram',
        to: '42',
        timeoutSeconds: 30,
      });
      await finish(g.gateway.store, id, { status: 'timed_out', reply: null, error: 'timed out' });
      const answer = await post(`/api/runs/${id}/retry`);
      expect(answer.status, answer.text).toBe(202);
      expect(answer.body).toEqual({ ok: true, runId: expect.stringMatching(/^run_/), retryOf: id });
      const newId = answer.body.runId;
      expect(newId).not.toBe(id);

      const [retried] = (await g.admin('/api/runs?limit=1')).body.runs;
      expect(retried).toMatchObject({
        runId: newId,
        status: 'queued',
        retryOf: id,
        source: 'hook:agent',
        name: 'Job',
        sessionKey: 'hook:job',
        delivery: { status: 'pending', channel: 'telegram', to: '42' },
      });
      const [claimed] = await g.gateway.store.runs.claimRuns('w', Date.now(), 60_000, 5);
      expect(claimed).toMatchObject({
        id: newId,
        message: 'try me',
        timeoutSeconds: 30,
        deliver: true,
        to: '42',
      });
      // A retry of a retry names the run it retries.
      expect((await g.gateway.store.admin.getStoredRun(newId))?.run.retryOf).toBe(id);
      expect(retried.tokenId).toBeNull();
      // A body (as a browser's fetch may send) is ignored, whatever its type; each retry is a new run.
      const withBody = await readAnswer(
        await fetch(`${g.url}/api/runs/${id}/retry`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: '{"ignored":true}',
        }),
      );
      expect(withBody.status, withBody.text).toBe(202);
      expect(withBody.body.retryOf).toBe(id);
      expect(withBody.body.runId).not.toBe(newId);
    });

    it('a retry carries no hook token: the run it retries keeps its own, the new run has null', async () => {
      const g = await start();
      const store = g.gateway.store;
      const id = await tokenRun(store, 'ci-bot');
      await finish(store, id, { status: 'failed', reply: null, error: 'model down' });
      const answer = await post(`/api/runs/${id}/retry`);
      expect(answer.status, answer.text).toBe(202);
      const newId = answer.body.runId;
      expect((await g.admin(`/api/runs/${id}`)).body.tokenId).toBe('ci-bot');
      const retried = await g.admin(`/api/runs/${newId}`);
      expect(retried.body).toMatchObject({
        runId: newId,
        retryOf: id,
        tokenId: null,
        message: 'from a sender',
      });
      expect((await store.admin.getStoredRun(newId))?.run.tokenId).toBeNull();
      // So the sender's list does not show the operator's retry.
      const listed = (await g.admin('/api/runs?tokenId=ci-bot')).body.runs;
      expect(listed.map((r: { runId: string }) => r.runId)).toEqual([id]);
    });

    it('with the workers running, the retried run executes and succeeds', async () => {
      const g = await start(true);
      const id = await agentRun({ message: 'first' });
      await waitFor(
        async () => (await g.admin(`/api/runs/${id}`)).body.status === 'succeeded',
        'the first run to finish',
      );
      const answer = await post(`/api/runs/${id}/retry`);
      expect(answer.status, answer.text).toBe(202);
      const view = await waitFor(async () => {
        const run = (await g.admin(`/api/runs/${answer.body.runId}`)).body;
        return run.status === 'succeeded' ? run : undefined;
      }, 'the retried run to succeed');
      expect(view.reply).toContain('first');
    });
  });

  describe('POST /api/runs/retry (bulk)', () => {
    const bulk = async (body: Record<string, unknown>) =>
      readAnswer(
        await fetch(`${gw?.url}/api/runs/retry`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      );

    it('a dry run counts and changes nothing; the retry makes one new run per match; sent again, it retries nothing', async () => {
      const g = await start();
      const store = g.gateway.store;
      const t = Date.UTC(2026, 10, 28, 12);
      const failed: string[] = [];
      for (let i = 0; i < 3; i++) {
        const id = await tokenRun(store, 'ci-bot', i === 2 ? 'hook:github' : 'hook:agent');
        await finish(store, id, { status: 'failed', reply: null, error: 'down', finishedAt: t + i * 60_000 });
        failed.push(id);
      }
      const timedOut = await tokenRun(store, null);
      await finish(store, timedOut, { status: 'timed_out', reply: null, error: 'slow', finishedAt: t });
      const ok = await tokenRun(store, null);
      await finish(store, ok, { finishedAt: t });

      const dry = await bulk({ status: 'failed', dryRun: true });
      expect(dry.status, dry.text).toBe(200);
      expect(dry.body).toEqual({ ok: true, matched: 3, retried: [] });
      expect((await g.admin('/api/runs')).body.runs).toHaveLength(5);

      // The window is on finishedAt: since inclusive, until exclusive.
      const windowed = await bulk({
        status: 'failed',
        since: new Date(t + 60_000).toISOString(),
        until: new Date(t + 120_000).toISOString(),
        dryRun: true,
      });
      expect(windowed.body.matched).toBe(1);
      expect((await bulk({ status: 'failed', source: 'hook:github', dryRun: true })).body.matched).toBe(1);

      // limit caps the retries, oldest finished first; matched counts them all.
      const first = await bulk({ status: 'failed', limit: 2 });
      expect(first.status, first.text).toBe(202);
      expect(first.body.matched).toBe(3);
      expect(first.body.retried.map((r: { retryOf: string }) => r.retryOf)).toEqual(failed.slice(0, 2));
      const rest = await bulk({ status: 'failed' });
      expect(rest.body).toEqual({
        ok: true,
        matched: 1,
        retried: [{ runId: expect.stringMatching(/^run_/), retryOf: failed[2] }],
      });
      expect(await bulk({ status: 'failed' })).toMatchObject({
        status: 202,
        body: { ok: true, matched: 0, retried: [] },
      });

      // Each new run is what the single retry makes: the same inputs, retryOf, no hook token.
      const newId = rest.body.retried[0].runId;
      expect((await g.admin(`/api/runs/${newId}`)).body).toMatchObject({
        status: 'queued',
        retryOf: failed[2],
        source: 'hook:github',
        tokenId: null,
        message: 'from a sender',
      });
      const runs = (await g.admin('/api/runs?status=queued')).body.runs;
      expect(runs).toHaveLength(3);
      // The timed-out run is its own status's.
      const timed = await bulk({ status: 'timed_out' });
      expect(timed.body.retried.map((r: { retryOf: string }) => r.retryOf)).toEqual([timedOut]);
    });
  });

  describe('POST /api/runs/{runId}/redeliver and GET /api/deliveries', () => {
    it('is 404 for an unknown run and 409 nothing_to_deliver without a reply or with deliver false', async () => {
      const g = await start();
      expectError(await post('/api/runs/run_unknown/redeliver'), 404, 'not_found');
      const queued = await agentRun({ deliver: true, channel: 'telegram', to: '42', sessionKey: 'hook:a' });
      expectError(await post(`/api/runs/${queued}/redeliver`), 409, 'nothing_to_deliver');
      await finish(g.gateway.store, queued, { status: 'failed', reply: null, error: 'no' });
      expectError(await post(`/api/runs/${queued}/redeliver`), 409, 'nothing_to_deliver');
      const silent = await agentRun({ deliver: false, sessionKey: 'hook:b' });
      await finish(g.gateway.store, silent);
      expectError(await post(`/api/runs/${silent}/redeliver`), 409, 'nothing_to_deliver');
      expect((await g.admin('/api/deliveries')).body).toEqual({ deliveries: [] });
    });

    it('puts the reply in the outbox again to the same route, and the run back to pending', async () => {
      const g = await start();
      const store = g.gateway.store;
      const id = await agentRun({ deliver: true, channel: 'last', sessionKey: 'hook:r' });
      await finish(store, id, { delivery: { status: 'pending', channel: 'last', to: null, reason: null } });
      expectError(await post(`/api/runs/${id}/redeliver`), 409, 'delivery_pending');

      // The engine fixed the route (last → telegram:42), then the platform refused it.
      const [item] = await store.outbox.deliveryHeads(10);
      if (!item) throw new Error('no outbox item');
      await store.outbox.resolveDelivery(item.id, { channel: 'telegram', to: '42' }, Date.now());
      const failed = { status: 'failed' as const, channel: 'telegram', to: '42', reason: 'chat not found' };
      await store.outbox.finishDelivery(
        { ...item, resolved: { channel: 'telegram', to: '42' } },
        failed,
        Date.now(),
      );
      expect((await g.admin(`/api/runs/${id}`)).body.delivery).toEqual(failed);

      const answer = await post(`/api/runs/${id}/redeliver`);
      expect(answer.status, answer.text).toBe(202);
      expect(answer.body).toEqual({ ok: true });
      expect((await g.admin(`/api/runs/${id}`)).body.delivery).toEqual({
        status: 'pending',
        channel: 'telegram',
        to: '42',
        reason: null,
      });
      const [again] = await store.outbox.deliveryHeads(10);
      expect(again).toMatchObject({
        refId: id,
        text: 'the reply',
        resolved: { channel: 'telegram', to: '42' },
      });
      expect(again?.id).not.toBe(item.id);

      const list = (await g.admin('/api/deliveries')).body.deliveries;
      expect(list).toEqual([
        {
          id: again?.id,
          runId: id,
          heartbeatId: null,
          channel: 'telegram',
          to: '42',
          status: 'pending',
          attempts: 0,
          lastError: null,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
        {
          id: item.id,
          runId: id,
          heartbeatId: null,
          channel: 'telegram',
          to: '42',
          status: 'failed',
          attempts: 1,
          lastError: 'chat not found',
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ]);
      const ids = async (query: string) =>
        (await g.admin(`/api/deliveries?${query}`)).body.deliveries.map((d: { id: string }) => d.id);
      expect(await ids('status=failed')).toEqual([item.id]);
      expect(await ids('status=pending')).toEqual([again?.id]);
      expect(await ids('status=delivered')).toEqual([]);
      expect(await ids('limit=1')).toEqual([again?.id]);

      // One run's deliveries, newest first (the run's page asks for its newest only).
      const other = await agentRun({ deliver: true, channel: 'telegram', to: '43', sessionKey: 'hook:o' });
      await finish(store, other, {
        delivery: { status: 'pending', channel: 'telegram', to: '43', reason: null },
      });
      expect((await ids(''))[0]).not.toBe(again?.id);
      expect(await ids(`runId=${id}`)).toEqual([again?.id, item.id]);
      expect(await ids(`runId=${id}&limit=1`)).toEqual([again?.id]);
      expect(await ids(`runId=${id}&status=failed`)).toEqual([item.id]);
      expect(await ids(`runId=${other}`)).toHaveLength(1);
      expect(await ids('runId=run_unknown')).toEqual([]);
      expectInvalidPayload(await g.admin('/api/deliveries?runId='), 'runId');
    });

    it('with the workers running, a delivered reply is sent to the chat again', async () => {
      const tg = await startFakeTelegram({ token: TELEGRAM.botToken, chats: [4242] });
      try {
        const g = await start(true, { ...TELEGRAM, apiBaseUrl: tg.url });
        const id = await agentRun({
          message: 'ping',
          deliver: true,
          channel: 'telegram',
          to: '4242',
          wakeMode: 'next-heartbeat', // no heartbeat reply to the same chat meanwhile
        });
        const delivered = async () => {
          const run = (await g.admin(`/api/runs/${id}`)).body;
          return run.delivery.status === 'delivered' ? run : undefined;
        };
        await waitFor(delivered, 'the first delivery');
        expect(tg.messagesFor(4242)).toHaveLength(1);
        const answer = await post(`/api/runs/${id}/redeliver`);
        expect(answer.status, answer.text).toBe(202);
        await waitFor(() => tg.messagesFor(4242).length === 2, 'the second message');
        const texts = tg.messagesFor(4242).map((m) => m.text);
        expect(texts[1]).toBe(texts[0]);
        expect((await waitFor(delivered, 'the run delivered again')).delivery).toMatchObject({
          channel: 'telegram',
          to: '4242',
        });
        const list = (await g.admin('/api/deliveries')).body.deliveries;
        expect(list.map((d: { status: string; runId: string }) => [d.status, d.runId])).toEqual([
          ['delivered', id],
          ['delivered', id],
        ]);
      } finally {
        await gw?.stop();
        gw = undefined;
        await tg.close();
      }
    });

    it("shows a heartbeat's reply with runId null, and refuses a bad status or limit naming it", async () => {
      const g = await start();
      await g.gateway.store.sessions.recordHeartbeat({
        id: 'hb_test',
        sessionKey: 'agent:main:main',
        startedAt: Date.now(),
        finishedAt: Date.now(),
        status: 'succeeded',
        eventIds: [],
        reply: 'beat',
        error: null,
        transcript: [],
        delivery: { status: 'pending', channel: 'last', to: null, reason: null },
      });
      const [beat] = (await g.admin('/api/deliveries')).body.deliveries;
      expect(beat).toMatchObject({
        runId: null,
        heartbeatId: 'hb_test',
        channel: 'last',
        to: null,
        status: 'pending',
      });
      for (const status of ['skipped', 'none', '', 'pending&status=failed']) {
        expectInvalidPayload(await g.admin(`/api/deliveries?status=${status}`), 'status');
      }
      for (const limit of ['0', '1001', 'x'])
        expectInvalidPayload(await g.admin(`/api/deliveries?limit=${limit}`), 'limit');
      expectError(await readAnswer(await fetch(`${g.url}/api/deliveries`)), 401, 'unauthorized');
    });
  });
});
