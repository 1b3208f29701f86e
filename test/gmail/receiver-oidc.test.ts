/**
 * The receiver with `hooks.gmail.oidc` on, over real HTTP against the loopback fake
 * Google's JWKS: a push with a wrong claim is 401 and counts toward the lockout of
 * that address; a valid token gets the mail through.
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
const AUDIENCE = 'https://mail.example.com/gmail-pubsub';
/** Failures 1–20 are 401, the 21st attempt is 429 (docs/authentication.md). */
const LOCKOUT_AFTER = 20;

describe('gmail receiver with OIDC', () => {
  let google: FakeGoogle;
  let gw: TestGateway;
  let receiver: GmailReceiver;
  let receiverUrl: string;

  beforeEach(async () => {
    google = await startFakeGoogle({ account: ACCOUNT });
    const dir = tempDir('agentgate-gmail-oidc-');
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
            oidc: { audience: AUDIENCE, email: google.oidcEmail },
            endpoints: google.endpoints,
          },
        },
      },
      { dir },
    );
    receiver = createGmailReceiver(gw.config, createLogger('silent'), { gatewayUrl: gw.url });
    receiverUrl = await receiver.start();
    await waitFor(async () => (google.watchCalls.length > 0 ? true : undefined), 'the watch call');
  });
  afterEach(async () => {
    await receiver?.stop();
    await gw?.stop();
    await google.close();
  });

  const push = (authorization: string | undefined) =>
    fetch(`${receiverUrl}?token=${PUSH_TOKEN}`, {
      method: 'POST',
      headers: authorization ? { authorization } : {},
      body: JSON.stringify(google.pushEnvelope()),
    });
  const now = () => Math.floor(Date.now() / 1000);
  const bearer = (claims: Record<string, unknown> = {}, opts?: Parameters<FakeGoogle['idToken']>[1]) =>
    `Bearer ${google.idToken({ aud: AUDIENCE, ...claims }, opts)}`;

  /** One wrong thing each: every registered claim, the signer and the email. */
  const faults: Array<[string, () => string | undefined]> = [
    ['no token', () => undefined],
    ['a wrong audience', () => bearer({ aud: 'https://evil.example/gmail-pubsub' })],
    ['another issuer', () => bearer({ iss: 'https://evil.example' })],
    ['an expired token', () => bearer({ iat: now() - 3000, exp: now() - 600 })],
    ['nbf in the future', () => bearer({ nbf: now() + 600 })],
    ['iat in the future', () => bearer({ iat: now() + 600 })],
    ['no exp', () => bearer({ exp: undefined })],
    ['another email', () => bearer({ email: 'someone@else.iam.gserviceaccount.com' })],
    ['an unverified email', () => bearer({ email_verified: false })],
    ['a foreign signer', () => bearer({}, { foreignKey: true })],
  ];

  it('accepts a push whose token Google signed for this audience, and runs the mail', async () => {
    google.addMessage({ labelIds: ['INBOX'], from: 'a@x', subject: 'oidc', snippet: 's', textBody: 'b' });
    const response = await push(bearer());
    expect(response.status).toBe(204);
    const db = new Database(join(gw.dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      const runs = db.prepare('SELECT message FROM runs').all() as { message: string }[];
      expect(runs).toHaveLength(1);
      expect(runs[0]?.message).toContain('Subject: oidc');
    } finally {
      db.close();
    }
  });

  it.each(faults)('refuses a push with %s (401, JSON error)', async (_name, header) => {
    const response = await push(header());
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ ok: false, code: 'unauthorized' });
  });

  it('counts each refused token toward the lockout: the 21st attempt is 429 even with a good token', async () => {
    for (let i = 0; i < LOCKOUT_AFTER; i++) {
      const [, header] = faults[i % faults.length] as [string, () => string | undefined];
      expect((await push(header())).status).toBe(401);
    }
    const locked = await push(bearer());
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await locked.json()).toMatchObject({ ok: false, code: 'rate_limited' });
  });
});
