/**
 * GET /api/callbacks over real HTTP (docs/operating.md, "Admin API"): the completion callbacks,
 * newest first, with the URL's origin only, filtered by status; refused parameters name
 * themselves; the admin token only. The worker and the callback engine are off: a run is
 * finished and its callback ended through the gateway's own store, so each state is reached
 * deterministically. Runs on SQLite and on PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunCompletion, Store } from '../../src/store/types.js';
import { HOOK_TOKEN, readAnswer, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sharedTestDatabase } from '../helpers/pg-database.js';
import { expectError, expectInvalidPayload } from '../ingress/support.js';
import { PG_ENABLED } from '../store/drivers.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
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

async function start(): Promise<TestGateway> {
  const url = storeKind === 'postgres' ? await database.fresh() : undefined;
  gw = await startTestGateway(
    {
      store: url ? { driver: 'postgres', url } : undefined,
      hooks: {
        allowRequestSessionKey: true,
        callbacks: { secret: SECRET, allowedOrigins: ['https://ci.example.com'] },
      },
    },
    { workers: false },
  );
  return gw;
}

async function agentRun(g: TestGateway, callbackUrl: string, sessionKey: string): Promise<string> {
  const answer = await g.hook('agent', { message: 'hello', deliver: false, callbackUrl, sessionKey });
  expect(answer.status, answer.text).toBe(202);
  return answer.body.runId as string;
}

/** Claims the one queued run, completes it, and ends its callback as `status`. */
async function finishWithCallback(
  store: Store,
  runId: string,
  status: 'delivered' | 'failed',
  error: string | null,
): Promise<void> {
  const now = Date.now();
  const [claimed] = await store.runs.claimRuns('test-owner', now, 60_000, 1);
  expect(claimed?.id).toBe(runId);
  const completion: RunCompletion = {
    runId,
    owner: 'test-owner',
    sessionKey: claimed?.sessionKey as string,
    status: 'succeeded',
    reply: 'the reply',
    error: null,
    finishedAt: now,
    transcript: [],
    summary: {
      id: `evt_summary_${runId}`,
      sessionKey: 'agent:main:main',
      text: 'Hook: the reply',
      source: `run:${runId}`,
      wakeMode: 'next-heartbeat',
      ts: now,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
  };
  expect(await store.runs.completeRun(completion)).toBe(true);
  const [item] = await store.callbacks.claimCallbacks('test-cb', Date.now() + 1000, 60_000, 10);
  expect(item?.runId).toBe(runId);
  if (!item) return;
  const attempt = { attempts: 1, body: '{}', error, now: Date.now(), status };
  expect(await store.callbacks.finishCallback(item, 'test-cb', attempt)).toBe(true);
}

describe.each(STORES)('GET /api/callbacks on %s', (kind) => {
  beforeAll(() => {
    storeKind = kind;
  });

  it('lists callbacks newest first with the origin only, and filters by status', async () => {
    const g = await start();
    expect((await g.admin('/api/callbacks')).body).toEqual({ callbacks: [] });
    const failed = await agentRun(g, 'https://ci.example.com/builds/42/done?key=s3cret', 'hook:cb-a');
    await finishWithCallback(g.gateway.store, failed, 'failed', 'HTTP 502 Bad Gateway\nupstream said no');
    const delivered = await agentRun(g, 'https://ci.example.com/builds/43/done', 'hook:cb-b');
    await finishWithCallback(g.gateway.store, delivered, 'delivered', null);
    const waiting = await agentRun(g, 'https://ci.example.com/builds/44/done', 'hook:cb-c');

    const answer = await g.admin('/api/callbacks');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.callbacks.map((c: { runId: string }) => c.runId)).toEqual([
      waiting,
      delivered,
      failed,
    ]);
    expect(answer.body.callbacks[2]).toEqual({
      id: expect.stringMatching(/^msg_/),
      runId: failed,
      origin: 'https://ci.example.com',
      status: 'failed',
      attempts: 1,
      lastError: 'HTTP 502 Bad Gateway\nupstream said no',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(answer.text).not.toMatch(/s3cret|builds/);

    const runIds = async (query: string) =>
      (await g.admin(`/api/callbacks?${query}`)).body.callbacks.map((c: { runId: string }) => c.runId);
    expect(await runIds('status=failed')).toEqual([failed]);
    expect(await runIds('status=delivered')).toEqual([delivered]);
    expect(await runIds('status=pending')).toEqual([waiting]);
    expect(await runIds('limit=1')).toEqual([waiting]);
  });

  it('refuses a bad status or limit naming it, and takes the admin token only', async () => {
    const g = await start();
    for (const status of ['waiting', 'none', '', 'failed&status=pending']) {
      expectInvalidPayload(await g.admin(`/api/callbacks?status=${status}`), 'status');
    }
    for (const limit of ['0', '1001', 'x']) {
      expectInvalidPayload(await g.admin(`/api/callbacks?limit=${limit}`), 'limit');
    }
    expectError(await readAnswer(await fetch(`${g.url}/api/callbacks`)), 401, 'unauthorized');
    const withHookToken = await fetch(`${g.url}/api/callbacks`, {
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    });
    expectError(await readAnswer(withHookToken), 401, 'unauthorized');
  });
});
