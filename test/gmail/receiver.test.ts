/**
 * The Gmail push receiver against a loopback fake of Google's APIs and a real
 * gateway with the gmail preset: push → one agent run carrying the mail,
 * redelivery, wrong token, malformed envelope, expired history id, renewal,
 * and a gateway that is down.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GmailReceiver } from '../../src/gmail/receiver.js';
import { createGmailReceiver } from '../../src/gmail/start.js';
import { createLogger } from '../../src/log.js';
import { type FakeGoogle, startFakeGoogle } from '../fakes/google.js';
import { startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const ACCOUNT = 'me@example.com';
const PUSH_TOKEN = 'push-token-0123456789abcdef';

describe('gmail receiver', () => {
  let google: FakeGoogle;
  let gw: TestGateway;
  let receiver: GmailReceiver;
  let receiverUrl: string;

  async function start(gmail: Record<string, unknown> = {}, gatewayUrl?: string): Promise<void> {
    const dir = tempDir('agentgate-gmail-');
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
            serve: { bind: '127.0.0.1', port: 0, path: '/gmail-pubsub' },
            endpoints: google.endpoints,
            ...gmail,
          },
        },
      },
      { dir },
    );
    receiver = createGmailReceiver(gw.config, createLogger('silent'), { gatewayUrl: gatewayUrl ?? gw.url });
    receiverUrl = await receiver.start();
    await waitFor(async () => (google.watchCalls.length > 0 ? true : undefined), 'the watch call');
  }

  const push = (envelope: unknown, token = PUSH_TOKEN) =>
    fetch(`${receiverUrl}?token=${token}`, { method: 'POST', body: JSON.stringify(envelope) });

  const runs = () => {
    const db = new Database(join(gw.dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      return db.prepare('SELECT session_key AS sessionKey, message, source FROM runs ORDER BY seq').all() as {
        sessionKey: string;
        message: string;
        source: string;
      }[];
    } finally {
      db.close();
    }
  };

  beforeEach(async () => {
    google = await startFakeGoogle({ account: ACCOUNT });
  });
  afterEach(async () => {
    await receiver?.stop();
    await gw?.stop();
    await google.close();
  });

  it('turns a push into one agent run whose prompt carries the mail', async () => {
    await start();
    const mail = google.addMessage({
      labelIds: ['INBOX'],
      from: 'Ada <ada@example.com>',
      subject: 'Invoice 42',
      snippet: 'Please pay',
      textBody: 'Please pay 10 EUR by Friday.',
    });
    const response = await push(google.pushEnvelope());
    expect(response.status).toBe(204);
    const [run] = runs();
    expect(run?.sessionKey).toBe(`hook:gmail:${mail.id}`);
    expect(run?.source).toBe('gmail');
    expect(run?.message).toContain('From: Ada <ada@example.com>');
    expect(run?.message).toContain('Subject: Invoice 42');
    expect(run?.message).toContain('Please pay 10 EUR by Friday.');
  });

  it('does not run a message twice when Pub/Sub redelivers the push', async () => {
    await start();
    google.addMessage({ labelIds: ['INBOX'], from: 'a@x', subject: 'once', snippet: 's', textBody: 'once' });
    const envelope = google.pushEnvelope();
    expect((await push(envelope)).status).toBe(204);
    expect((await push(envelope)).status).toBe(204);
    expect((await push(google.pushEnvelope())).status).toBe(204); // a new push, nothing new in the mailbox
    expect(runs()).toHaveLength(1);
  });

  it('never forwards sent, draft, spam or trash mail', async () => {
    await start({ label: 'INBOX' });
    google.addMessage({ labelIds: ['SENT'], from: 'me', subject: 'sent', snippet: 's', textBody: 'sent' });
    google.addMessage({
      labelIds: ['INBOX', 'TRASH'],
      from: 'x',
      subject: 'trash',
      snippet: 's',
      textBody: 't',
    });
    google.addMessage({ labelIds: ['INBOX'], from: 'y', subject: 'kept', snippet: 's', textBody: 'kept' });
    expect((await push(google.pushEnvelope())).status).toBe(204);
    expect(runs().map((r) => /Subject: (\w+)/.exec(r.message)?.[1])).toEqual(['kept']);
  });

  it('refuses a wrong push token (401) and a malformed envelope (400) without a run', async () => {
    await start();
    google.addMessage({ labelIds: ['INBOX'], from: 'a', subject: 's', snippet: 's', textBody: 'b' });
    const wrong = await push(google.pushEnvelope(), 'wrong-token');
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ ok: false, code: 'unauthorized' });
    const malformed = await push({ message: { data: 'bm90IGpzb24=', messageId: '1' } });
    expect(malformed.status).toBe(400);
    expect((await push({ hello: 'world' })).status).toBe(400);
    expect(runs()).toHaveLength(0);
  });

  it('acknowledges a notification for another mailbox without reading anything', async () => {
    await start();
    const response = await push(google.pushEnvelope({ emailAddress: 'someone@else.com' }));
    expect(response.status).toBe(204);
    expect(runs()).toHaveLength(0);
  });

  it('recovers from an expired history id without losing the mail that triggered the push', async () => {
    await start();
    google.addMessage({ labelIds: ['INBOX'], from: 'a', subject: 'first', snippet: 's', textBody: 'first' });
    expect((await push(google.pushEnvelope())).status).toBe(204);
    google.addMessage({
      labelIds: ['INBOX'],
      from: 'b',
      subject: 'second',
      snippet: 's',
      textBody: 'second',
    });
    google.expireHistoryBefore(google.historyId + 1);
    expect((await push(google.pushEnvelope())).status).toBe(204);
    expect(runs().map((r) => /Subject: (\w+)/.exec(r.message)?.[1])).toEqual(['first', 'second']);
  });

  it('answers 5xx while the gateway cannot take the mail, so Pub/Sub retries, and succeeds on redelivery', async () => {
    await start({}, 'http://127.0.0.1:9'); // nothing listens there
    google.addMessage({ labelIds: ['INBOX'], from: 'a', subject: 'retry', snippet: 's', textBody: 'retry' });
    const envelope = google.pushEnvelope();
    expect((await push(envelope)).status).toBeGreaterThanOrEqual(500);
    await receiver.stop();
    receiver = createGmailReceiver(gw.config, createLogger('silent'), { gatewayUrl: gw.url });
    receiverUrl = await receiver.start();
    expect((await push(envelope)).status).toBe(204);
    expect(runs()).toHaveLength(1);
  });

  it('renews the watch every renewEveryMinutes', async () => {
    await start({ renewEveryMinutes: 0.005 });
    await waitFor(async () => (google.watchCalls.length >= 3 ? true : undefined), 'renewals');
  });
});
