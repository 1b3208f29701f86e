/** Every mapping field reaches the stored run or event, and each signature scheme works over HTTP. */
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const STRIPE_SECRET = 'whsec_stripe_test_secret';
const SLACK_SECRET = 'slack-signing-secret';
const SW_KEY = Buffer.from('standard-webhooks-key-bytes');
const SW_SECRET = `whsec_${SW_KEY.toString('base64')}`;

describe('mapping fields and signatures', () => {
  let gw: TestGateway;
  const row = (runId: string) => {
    const db = new Database(join(gw.dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      return db.prepare('SELECT * FROM runs WHERE id = ?').get(runId) as Record<string, unknown>;
    } finally {
      db.close();
    }
  };

  beforeAll(async () => {
    gw = await startTestGateway({
      models: { providers: { echo: { api: 'echo' } } },
      agents: {
        defaults: { model: 'echo/echo', models: ['echo/echo', { id: 'echo/big', alias: 'big' }] },
        list: [{ id: 'main', default: true }, { id: 'ops' }],
      },
      channels: { telegram: { botToken: '1:t' } },
      hooks: {
        allowedSessionKeyPrefixes: ['hook:'],
        mappings: [
          {
            id: 'all-fields',
            match: { path: 'full' },
            name: '{{service}} alert',
            messageTemplate: 'Alert for {{service}}',
            wakeMode: 'next-heartbeat',
            agentId: 'ops',
            sessionKey: 'hook:alerts',
            deliver: true,
            channel: 'telegram',
            to: '4242',
            model: 'big',
            thinking: 'high',
            timeoutSeconds: 42,
            allowUnsafeExternalContent: true,
          },
          { id: 'small', match: { path: 'small' }, maxBodyBytes: 64, messageTemplate: 'x' },
          { id: 'default-channel', match: { path: 'plain' }, messageTemplate: 'hello' },
          { id: 'stripe', match: { path: 'stripe' }, verify: { kind: 'stripe', secret: STRIPE_SECRET } },
          { id: 'slack', match: { path: 'slack' }, verify: { kind: 'slack', secret: SLACK_SECRET } },
          { id: 'sw', match: { path: 'sw' }, verify: { kind: 'standard-webhooks', secret: SW_SECRET } },
        ],
      },
    });
  });
  afterAll(() => gw.stop());

  it('honours every agent field of the mapping', async () => {
    const response = await gw.hook('full', { service: 'db' });
    expect(response.status).toBe(202);
    const run = (await gw.admin(`/api/runs/${response.body.runId}`)).body;
    expect(run).toMatchObject({
      agentId: 'ops',
      sessionKey: 'hook:alerts',
      model: 'echo/big',
      delivery: { status: 'pending', channel: 'telegram', to: '4242' },
    });
    expect(row(response.body.runId)).toMatchObject({
      name: 'db alert',
      message: 'Alert for db',
      thinking: 'high',
      timeout_seconds: 42,
      wake_mode: 'next-heartbeat',
      allow_unsafe: 1,
      source: 'hook:full',
    });
  });

  it('defaults channel to last and applies a per-mapping body limit', async () => {
    const plain = await gw.hook('plain', {});
    expect(row(plain.body.runId)).toMatchObject({ channel: 'last', allow_unsafe: 0 });
    const big = await gw.hook('small', { filler: 'y'.repeat(100) });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');
  });

  const now = () => Math.floor(Date.now() / 1000);

  it('verifies Stripe signatures: valid, tampered, stale', async () => {
    const body = JSON.stringify({ type: 'invoice.paid' });
    const sign = (t: number, payload = body) =>
      `t=${t},v1=${createHmac('sha256', STRIPE_SECRET).update(`${t}.${payload}`).digest('hex')}`;
    expect((await gw.hook('stripe', body, { 'stripe-signature': sign(now()) })).status).toBe(202);
    expect((await gw.hook('stripe', `${body} `, { 'stripe-signature': sign(now()) })).status).toBe(401);
    expect((await gw.hook('stripe', body, { 'stripe-signature': sign(now() - 600) })).status).toBe(401);
  });

  it('verifies Slack signatures: valid, tampered, stale', async () => {
    const body = JSON.stringify({ type: 'event_callback' });
    const headers = (t: number, payload = body) => ({
      'x-slack-request-timestamp': String(t),
      'x-slack-signature': `v0=${createHmac('sha256', SLACK_SECRET).update(`v0:${t}:${payload}`).digest('hex')}`,
    });
    expect((await gw.hook('slack', body, headers(now()))).status).toBe(202);
    expect((await gw.hook('slack', `${body} `, headers(now()))).status).toBe(401);
    expect((await gw.hook('slack', body, headers(now() - 600))).status).toBe(401);
  });

  it('verifies Standard Webhooks signatures: valid, tampered, stale', async () => {
    const body = JSON.stringify({ type: 'user.created' });
    const headers = (t: number, payload = body) => ({
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(t),
      'webhook-signature': `v1,${createHmac('sha256', SW_KEY).update(`msg_1.${t}.${payload}`).digest('base64')}`,
    });
    expect((await gw.hook('sw', body, headers(now()))).status).toBe(202);
    expect((await gw.hook('sw', `${body} `, headers(now()))).status).toBe(401);
    expect((await gw.hook('sw', body, headers(now() - 600))).status).toBe(401);
  });
});
