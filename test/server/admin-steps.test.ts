/**
 * A run's steps and the operator's decision through the admin API (docs/operating.md, "A run's
 * steps" and "Approving tool calls"): GET /api/runs/{id}/steps lists what the run's loop
 * committed, with ISO times; POST /api/runs/{id}/approval takes one decision on a waiting run
 * and queues it again. Runs are made by posting real hooks with the worker off; the loop's
 * store writes are made through the gateway's own store, so each state is reached
 * deterministically. Every test runs on SQLite and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  type Answer,
  HOOK_TOKEN,
  startTestGateway,
  type TestGateway,
} from '../helpers/gateway.js';
import { expectError, expectInvalidPayload } from '../ingress/support.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const STORES = PG_ENABLED ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
const T0 = Date.UTC(2026, 0, 2, 3, 4, 5);
const WAITING = { step: 1, tool: 'tickets.create_ticket', arguments: { title: 'Outage' } };

let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.stop();
  gw = undefined;
  await database?.drop();
  database = undefined;
});

describe.each(STORES)('the steps admin API on %s', (storeKind) => {
  async function start(): Promise<TestGateway> {
    if (storeKind === 'postgres') database = await createTestDatabase();
    gw = await startTestGateway(
      { store: database ? { driver: 'postgres', url: database.url } : undefined },
      { inject: true, workers: false },
    );
    return gw;
  }

  /** A run accepted by the hook and leased to `owner`, as the worker would hold it. */
  async function heldRun(g: TestGateway, owner = 'loop'): Promise<string> {
    const answer = await g.hook('agent', { message: 'hello', deliver: false });
    expect(answer.status, answer.text).toBe(202);
    const [claimed] = await g.gateway.store.runs.claimRuns(owner, Date.now(), 60_000, 1);
    expect(claimed?.id).toBe(answer.body.runId);
    return answer.body.runId as string;
  }

  const decide = (g: TestGateway, runId: string, body: unknown, token = ADMIN_TOKEN): Promise<Answer> =>
    g.request(`/api/runs/${runId}/approval`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('GET /api/runs/{id}/steps lists the committed steps in order, with ISO times; the RunView counts them', async () => {
    const g = await start();
    const runId = await heldRun(g);
    const { steps } = g.gateway.store;
    const call = { callId: 'c1', tool: 'repo.get_pull_request', arguments: { number: 7 } };
    await steps.append(runId, 'loop', {
      kind: 'model',
      index: 0,
      text: '',
      calls: [call],
      status: 'ok',
      startedAt: T0,
      finishedAt: T0 + 1000,
    });
    await steps.append(runId, 'loop', {
      kind: 'tool',
      index: 1,
      ...call,
      result: '{"title":"Fix"}',
      status: 'denied',
      startedAt: T0 + 1000,
      finishedAt: T0 + 1500,
    });
    await steps.append(runId, 'loop', {
      kind: 'model',
      index: 2,
      text: 'It was denied.',
      calls: [],
      status: 'ok',
      startedAt: T0 + 1500,
      finishedAt: T0 + 2000,
    });
    const answer = await g.admin(`/api/runs/${runId}/steps`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      steps: [
        {
          index: 0,
          kind: 'model',
          status: 'ok',
          startedAt: '2026-01-02T03:04:05.000Z',
          finishedAt: '2026-01-02T03:04:06.000Z',
        },
        {
          index: 1,
          kind: 'tool',
          tool: 'repo.get_pull_request',
          arguments: { number: 7 },
          result: '{"title":"Fix"}',
          status: 'denied',
          startedAt: '2026-01-02T03:04:06.000Z',
          finishedAt: '2026-01-02T03:04:06.500Z',
        },
        {
          index: 2,
          kind: 'model',
          result: 'It was denied.',
          status: 'ok',
          startedAt: '2026-01-02T03:04:06.500Z',
          finishedAt: '2026-01-02T03:04:07.000Z',
        },
      ],
    });
    expect((await g.admin(`/api/runs/${runId}`)).body).toMatchObject({ steps: 3, waitingFor: null });
  });

  it('a run without steps lists none; an unknown run is 404; the hook token is refused', async () => {
    const g = await start();
    const runId = await heldRun(g);
    expect((await g.admin(`/api/runs/${runId}/steps`)).body).toEqual({ steps: [] });
    expectError(await g.admin('/api/runs/run_nope/steps'), 404, 'not_found');
    const hookToken = await g.request(`/api/runs/${runId}/steps`, {
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    });
    expect(hookToken.status).toBe(401);
  });

  it('POST /api/runs/{id}/approval decides once and queues the run again; then 409 not_waiting', async () => {
    const g = await start();
    const runId = await heldRun(g);
    expectError(await decide(g, runId, { decision: 'approve' }), 409, 'not_waiting');
    expect((await g.gateway.store.steps.wait(runId, 'loop', WAITING, Date.now())).waiting).toBe(true);
    expect((await g.admin(`/api/runs/${runId}`)).body).toMatchObject({
      status: 'waiting',
      waitingFor: WAITING,
    });
    expect(
      (await g.admin('/api/runs?status=waiting')).body.runs.map((r: { runId: string }) => r.runId),
    ).toEqual([runId]);

    const approved = await decide(g, runId, { decision: 'approve' });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body).toEqual({ ok: true });
    expect((await g.admin(`/api/runs/${runId}`)).body).toMatchObject({ status: 'queued', waitingFor: null });
    expect(await g.gateway.store.steps.decision(runId, 1)).toBe('approve');
    expectError(await decide(g, runId, { decision: 'deny' }), 409, 'not_waiting');
    expect(await g.gateway.store.steps.decision(runId, 1)).toBe('approve');
  });

  it('refuses a bad decision (400), an unknown run (404), the hook token (401)', async () => {
    const g = await start();
    const runId = await heldRun(g);
    await g.gateway.store.steps.wait(runId, 'loop', WAITING, Date.now());
    expectInvalidPayload(await decide(g, runId, { decision: 'maybe' }), 'decision');
    expectInvalidPayload(await decide(g, runId, {}), 'decision');
    expectError(await decide(g, runId, { decision: 'deny', extra: 1 }), 400, 'invalid_payload');
    expectError(await decide(g, runId, 'not json'), 400, 'invalid_json');
    expectError(await decide(g, 'run_nope', { decision: 'deny' }), 404, 'not_found');
    expect((await decide(g, runId, { decision: 'deny' }, HOOK_TOKEN)).status).toBe(401);
    // None of those decided anything.
    expect((await g.admin(`/api/runs/${runId}`)).body.status).toBe('waiting');
    const denied = await decide(g, runId, { decision: 'deny' });
    expect(denied.status, denied.text).toBe(200);
    expect(await g.gateway.store.steps.decision(runId, 1)).toBe('deny');
  });
});
