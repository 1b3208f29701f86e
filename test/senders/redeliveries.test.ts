/**
 * Redeliveries once (docs/senders.md, "Redeliveries"): a sender's own delivery id is the
 * request's idempotency key, matched by the id alone (senders change fields between
 * attempts), durable across a restart and shared by PostgreSQL replicas. Over `inject()`
 * where no socket matters; the replicas and the restart over the real store.
 */
import { createHmac } from 'node:crypto';
import { rmSync } from 'node:fs';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const GITHUB_SECRET = 'github-secret-for-redeliveries';
const STRIPE_SECRET = 'whsec_redelivery_test_secret';

const MAPPINGS = [
  {
    id: 'github',
    match: { path: 'github' },
    auth: 'signature',
    verify: { kind: 'github', secret: GITHUB_SECRET },
    messageTemplate: 'PR {{number}}',
  },
  {
    id: 'stripe',
    match: { path: 'stripe' },
    auth: 'signature',
    verify: { kind: 'stripe', secret: STRIPE_SECRET },
    messageTemplate: 'Stripe {{type}}',
  },
  { id: 'ci', match: { path: 'ci' }, dedupe: { header: 'X-Build-Id' }, messageTemplate: 'build {{n}}' },
  { id: 'jobs', match: { path: 'jobs' }, dedupe: { path: 'job.id' }, messageTemplate: 'job {{job.id}}' },
];

const githubHeaders = (body: string, delivery: string) => ({
  'content-type': 'application/json',
  'x-github-delivery': delivery,
  'x-hub-signature-256': `sha256=${createHmac('sha256', GITHUB_SECRET).update(body).digest('hex')}`,
});

function postGithub(gw: TestGateway, body: string, delivery: string) {
  return gw.request('/hooks/github', { method: 'POST', headers: githubHeaders(body, delivery), body });
}

async function runCount(gw: TestGateway): Promise<number> {
  return (await gw.admin('/api/runs?limit=100')).body.runs.length;
}

describe('redeliveries on one gateway', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ hooks: { mappings: MAPPINGS } }, { inject: true });
  });
  afterAll(() => gw.stop());

  it("answers GitHub's redelivery as a replay of the first, whatever its body now says", async () => {
    const first = await postGithub(gw, JSON.stringify({ number: 1 }), 'd-1');
    expect(first.status).toBe(202);
    const again = await postGithub(gw, JSON.stringify({ number: 1, redelivery: true }), 'd-1');
    expect(again.status).toBe(202);
    expect(again.body.runId).toBe(first.body.runId);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await postGithub(gw, JSON.stringify({ number: 1 }), 'd-2');
    expect(other.body.runId).not.toBe(first.body.runId);
  });

  it("takes a Stripe event's id, across Stripe's retries with a changed pending_webhooks", async () => {
    const stripe = new Stripe('sk_test_unused');
    const send = (pending: number) => {
      const body = JSON.stringify({
        id: 'evt_42',
        type: 'invoice.payment_failed',
        pending_webhooks: pending,
      });
      const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret: STRIPE_SECRET });
      return gw.request('/hooks/stripe', { method: 'POST', headers: { 'stripe-signature': header }, body });
    };
    const first = await send(2);
    const retry = await send(1);
    expect(first.status).toBe(202);
    expect(retry.body.runId).toBe(first.body.runId);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
  });

  it('does not count a redelivery whose signature fails: it is refused, not replayed', async () => {
    const body = JSON.stringify({ number: 3 });
    const first = await postGithub(gw, body, 'd-3');
    const forged = await gw.request('/hooks/github', {
      method: 'POST',
      headers: { ...githubHeaders(body, 'd-3'), 'x-hub-signature-256': 'sha256=00' },
      body,
    });
    expect(first.status).toBe(202);
    expect(forged.status).toBe(401);
  });

  it('takes a header or a body path named by dedupe, on a token mapping', async () => {
    const before = await runCount(gw);
    const ci1 = await gw.hook('ci', { n: 1 }, { 'x-build-id': 'b-7' });
    const ci2 = await gw.hook('ci', { n: 2 }, { 'x-build-id': 'b-7' });
    expect(ci2.body.runId).toBe(ci1.body.runId);
    const job1 = await gw.hook('jobs', { job: { id: 99 }, attempt: 1 });
    const job2 = await gw.hook('jobs', { job: { id: 99 }, attempt: 2 });
    expect(job2.body.runId).toBe(job1.body.runId);
    // Without the id, each request is its own.
    const bare1 = await gw.hook('ci', { n: 3 });
    const bare2 = await gw.hook('ci', { n: 3 });
    expect(bare2.body.runId).not.toBe(bare1.body.runId);
    expect(await runCount(gw)).toBe(before + 4);
  });
});

describe('redeliveries across a restart', () => {
  it('replays a delivery the gateway accepted before it stopped', async () => {
    const dir = tempDir('agentgate-redeliver-');
    try {
      const body = JSON.stringify({ number: 5 });
      const before = await startTestGateway({ hooks: { mappings: MAPPINGS } }, { dir });
      const first = await postGithub(before, body, 'd-restart');
      await before.stop();
      const after = await startTestGateway({ hooks: { mappings: MAPPINGS } }, { dir });
      try {
        const again = await postGithub(after, body, 'd-restart');
        expect(again.body.runId).toBe(first.body.runId);
        expect(again.headers.get('idempotent-replayed')).toBe('true');
      } finally {
        await after.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.runIf(PG_ENABLED)('redeliveries across two PostgreSQL replicas', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: TestGateway;
  let b: TestGateway;
  beforeAll(async () => {
    database = await createTestDatabase();
    const config = { store: { driver: 'postgres', url: database.url }, hooks: { mappings: MAPPINGS } };
    a = await startTestGateway(config);
    b = await startTestGateway(config);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await database?.drop();
  });

  it('a redelivery to the other replica replays; the same delivery to both at once commits once', async () => {
    const body = JSON.stringify({ number: 6 });
    const first = await postGithub(a, body, 'd-pg-1');
    const other = await postGithub(b, body, 'd-pg-1');
    expect(other.body.runId).toBe(first.body.runId);
    expect(other.headers.get('idempotent-replayed')).toBe('true');
    const both = await Promise.all([postGithub(a, body, 'd-pg-2'), postGithub(b, body, 'd-pg-2')]);
    expect(both.map((answer) => answer.status)).toEqual([202, 202]);
    expect(both[0]?.body.runId).toBe(both[1]?.body.runId);
    expect(both.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(1);
  });
});
