/**
 * The receiver as `agentgate run` builds it: its own Fastify listener on
 * `hooks.gmail.serve`, handing mail to the gateway's app in process. Proves the
 * hand-over needs no HTTP (hookUrl points nowhere), keeps the ingress's
 * idempotency, and that the listener answers every refusal in the JSON shape.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GmailReceiver } from '../../src/gmail/receiver.js';
import { createGmailReceiver } from '../../src/gmail/start.js';
import { stateFileFor, writeGmailState } from '../../src/gmail/state.js';
import { createLogger } from '../../src/log.js';
import { type FakeGoogle, startFakeGoogle } from '../fakes/google.js';
import { startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const ACCOUNT = 'me@example.com';
const PUSH_TOKEN = 'push-token-0123456789abcdef';

describe('gmail receiver inside `agentgate run`', () => {
  let google: FakeGoogle;
  let gw: TestGateway;
  let receiver: GmailReceiver | undefined;
  let receiverUrl: string;

  const startReceiver = async () => {
    receiver = createGmailReceiver(gw.config, createLogger('silent'), { gatewayApp: gw.gateway.app });
    receiverUrl = await receiver.start();
  };

  beforeEach(async () => {
    google = await startFakeGoogle({ account: ACCOUNT });
    const dir = tempDir('agentgate-gmail-inproc-');
    mkdirSync(join(dir, 'credentials'), { recursive: true });
    writeFileSync(join(dir, 'credentials', 'gmail.json'), JSON.stringify(google.credentials), {
      mode: 0o600,
    });
    gw = await startTestGateway(
      {
        hooks: {
          presets: ['gmail'],
          gmail: {
            account: ACCOUNT,
            topic: 'projects/p/topics/agentgate-gmail',
            pushToken: PUSH_TOKEN,
            // Nothing listens there: mail that arrives did not travel over HTTP.
            hookUrl: 'http://127.0.0.1:9/hooks/gmail',
            serve: { bind: '127.0.0.1', port: 0, path: '/gmail-pubsub' },
            endpoints: google.endpoints,
          },
        },
      },
      { dir },
    );
    await startReceiver();
    await waitFor(async () => (google.watchCalls.length > 0 ? true : undefined), 'the watch call');
  });
  afterEach(async () => {
    await receiver?.stop();
    await gw?.stop();
    await google.close();
  });

  const push = (envelope: unknown, token = PUSH_TOKEN) =>
    fetch(`${receiverUrl}?token=${token}`, { method: 'POST', body: JSON.stringify(envelope) });
  const runs = () => {
    const db = new Database(join(gw.dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      return db.prepare('SELECT session_key AS sessionKey, message FROM runs ORDER BY seq').all() as {
        sessionKey: string;
        message: string;
      }[];
    } finally {
      db.close();
    }
  };

  it('listens on its own port and hands the mail to the ingress without HTTP', async () => {
    expect(new URL(receiverUrl).port).not.toBe(new URL(gw.url).port);
    const mail = google.addMessage({
      labelIds: ['INBOX'],
      from: 'Ada <ada@example.com>',
      subject: 'In process',
      textBody: 'no loopback hop',
    });
    expect((await push(google.pushEnvelope())).status).toBe(204);
    const [run] = runs();
    expect(run?.sessionKey).toBe(`hook:gmail:${mail.id}`);
    expect(run?.message).toContain('Subject: In process');
  });

  it("keeps the ingress's idempotency: a mail handed over again (receiver state rewound) runs once", async () => {
    const before = String(google.historyId);
    const mail = google.addMessage({ labelIds: ['INBOX'], from: 'a@x', subject: 'once', textBody: 'once' });
    const reads = () => google.calls.filter((call) => call.path.endsWith(`/messages/${mail.id}`)).length;
    expect((await push(google.pushEnvelope())).status).toBe(204);
    expect(runs()).toHaveLength(1);
    await receiver?.stop();
    // Rewind the receiver to before that mail and forget it was forwarded: it hands the mail over again.
    writeGmailState(stateFileFor(join(gw.dir, 'state'), ACCOUNT), { historyId: before, forwarded: [] });
    await startReceiver();
    expect((await push(google.pushEnvelope())).status).toBe(204);
    expect(reads()).toBe(2); // read and handed over twice…
    expect(runs()).toHaveLength(1); // …run once: the ingress answered the second with a replay
  });

  it('answers 5xx while the gateway cannot take the mail, so Pub/Sub retries', async () => {
    google.addMessage({ labelIds: ['INBOX'], from: 'a@x', subject: 'late', textBody: 'late' });
    await gw.gateway.app.close();
    const response = await push(google.pushEnvelope());
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ ok: false, code: 'unavailable' });
  });

  it('answers other paths, methods and oversized bodies in the JSON error shape', async () => {
    const origin = new URL(receiverUrl).origin;
    const elsewhere = await fetch(`${origin}/other`, { method: 'POST', body: '{}' });
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toMatchObject({ ok: false, code: 'not_found' });
    const get = await fetch(`${receiverUrl}?token=${PUSH_TOKEN}`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(await get.json()).toMatchObject({ ok: false, code: 'method_not_allowed' });
    const big = await fetch(`${receiverUrl}?token=${PUSH_TOKEN}`, {
      method: 'POST',
      body: JSON.stringify({ pad: 'x'.repeat(70_000) }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ ok: false, code: 'payload_too_large' });
  });

  it('locks an address out after 20 wrong push tokens, even for the right one', async () => {
    for (let i = 0; i < 20; i++) expect((await push(google.pushEnvelope(), 'wrong')).status).toBe(401);
    const locked = await push(google.pushEnvelope());
    expect(locked.status).toBe(429);
    expect(await locked.json()).toMatchObject({ ok: false, code: 'rate_limited' });
  });
});
