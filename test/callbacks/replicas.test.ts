/**
 * Callbacks across PostgreSQL replicas (docs/callers.md, "Across PostgreSQL
 * replicas"): two gateways on one database, runs accepted by both; each
 * callback is sent once — by whichever replica claims it — and both replicas
 * show the same RunView.callback.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type CallbackReceiver, startCallbackReceiver } from '../fakes/callback-receiver.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
let receiver: CallbackReceiver;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  if (!PG_ENABLED) return;
  database = await createTestDatabase();
  receiver = await startCallbackReceiver();
  const config = {
    store: { driver: 'postgres', url: database.url },
    hooks: { callbacks: { secret: SECRET, allowedOrigins: [receiver.url] } },
  };
  // One after the other: the first migrates, the second finds the schema in place.
  gateways.push(await startTestGateway(config, { workers: true }));
  gateways.push(await startTestGateway(config, { workers: true }));
}, 60_000);

afterAll(async () => {
  for (const gw of gateways) await gw.stop();
  await receiver?.close();
  await database?.drop();
}, 60_000);

it.skipIf(!PG_ENABLED)(
  'each callback is sent once across two replicas, and both show it delivered',
  async () => {
    const runIds: string[] = [];
    for (let i = 0; i < 30; i++) {
      const gw = gateways[i % 2] as TestGateway;
      const answer = await gw.hook('agent', {
        message: `m${i}`,
        deliver: false,
        callbackUrl: `${receiver.url}/cb`,
      });
      expect(answer.status, answer.text).toBe(202);
      runIds.push(answer.body.runId);
    }
    await waitFor(() => receiver.received.length >= runIds.length, 'every callback', 30_000);
    // Nothing more comes: give a second replica's poll time to (wrongly) send one again.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(receiver.received).toHaveLength(runIds.length);
    expect(new Set(receiver.received.map((request) => request.headers['webhook-id'])).size).toBe(
      runIds.length,
    );
    expect(new Set(receiver.received.map((request) => request.json.runId))).toEqual(new Set(runIds));
    for (const runId of runIds) {
      for (const gw of gateways) {
        const view = await waitFor(async () => {
          const run = (await gw.admin(`/api/runs/${runId}`)).body;
          return run.callback.status === 'delivered' && run;
        }, `${runId} delivered`);
        expect(view.callback).toEqual({ status: 'delivered', attempts: 1 });
      }
    }
  },
  90_000,
);
