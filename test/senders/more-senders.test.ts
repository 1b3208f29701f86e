/**
 * GitLab, Shopify, Linear and any HMAC sender (docs/senders.md, "Signed senders"): valid
 * signatures are computed here with node:crypto from each sender's documented recipe,
 * independently of the module under test; test/senders/sender-libraries.test.ts checks the
 * same schemes against the senders' own code where a library has it.
 */
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  deliveryIdOf,
  type VerifySettings,
  verifySettingsSchema,
  verifySignature,
} from '../../src/senders/index.js';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const SECRET = 'the-sender-secret-1234';

function request(headers: IncomingHttpHeaders, body: string, now = NOW) {
  const raw = Buffer.from(body);
  let payload: unknown;
  try {
    payload = JSON.parse(body);
  } catch {
    payload = undefined;
  }
  return { headers, body: raw, payload, now };
}

function reasonOf(settings: VerifySettings, req: ReturnType<typeof request>): string | undefined {
  const verdict = verifySignature(settings, req);
  if (verdict.ok) return undefined;
  expect(verdict.reason).not.toContain(settings.secret);
  return verdict.reason;
}

describe('gitlab (X-Gitlab-Token)', () => {
  const settings: VerifySettings = { kind: 'gitlab', secret: SECRET };
  const body = '{"object_kind":"push","ref":"refs/heads/main"}';

  it('accepts the secret token GitLab sends, in any header casing', () => {
    expect(reasonOf(settings, request({ 'X-Gitlab-Token': SECRET }, body))).toBeUndefined();
  });

  it('refuses another token, a prefix of it, and none', () => {
    expect(reasonOf(settings, request({ 'x-gitlab-token': `${SECRET}x` }, body))).toBe(
      'signature does not match',
    );
    expect(reasonOf(settings, request({ 'x-gitlab-token': SECRET.slice(0, 8) }, body))).toBe(
      'signature does not match',
    );
    expect(reasonOf(settings, request({}, body))).toBe('missing X-Gitlab-Token header');
  });

  it('takes X-Gitlab-Event-UUID as the delivery id', () => {
    const req = request({ 'x-gitlab-event-uuid': '0b3c…-uuid' }, body);
    expect(deliveryIdOf('gitlab', req)).toBe('0b3c…-uuid');
    expect(deliveryIdOf('gitlab', request({}, body))).toBeUndefined();
  });
});

describe('shopify (X-Shopify-Hmac-Sha256)', () => {
  const settings: VerifySettings = { kind: 'shopify', secret: SECRET };
  const body = '{"id":820982911946154500,"email":"jon@example.com"}';
  const sign = (text: string, secret = SECRET) => createHmac('sha256', secret).update(text).digest('base64');

  it('accepts the base64 HMAC-SHA256 of the raw body', () => {
    expect(reasonOf(settings, request({ 'x-shopify-hmac-sha256': sign(body) }, body))).toBeUndefined();
  });

  it('refuses a tampered body, another secret, a hex digest and junk around the base64', () => {
    const tampered = body.replace('jon', 'eve');
    expect(reasonOf(settings, request({ 'x-shopify-hmac-sha256': sign(body) }, tampered))).toBe(
      'signature does not match',
    );
    expect(reasonOf(settings, request({ 'x-shopify-hmac-sha256': sign(body, 'other') }, body))).toBe(
      'signature does not match',
    );
    const hex = createHmac('sha256', SECRET).update(body).digest('hex');
    expect(reasonOf(settings, request({ 'x-shopify-hmac-sha256': hex }, body))).toBe(
      'signature does not match',
    );
    expect(reasonOf(settings, request({ 'x-shopify-hmac-sha256': `!${sign(body)}` }, body))).toBe(
      'signature does not match',
    );
  });

  it('takes X-Shopify-Webhook-Id as the delivery id', () => {
    expect(deliveryIdOf('shopify', request({ 'x-shopify-webhook-id': 'b54557e4' }, body))).toBe('b54557e4');
  });
});

describe('linear (Linear-Signature and webhookTimestamp)', () => {
  const settings: VerifySettings = { kind: 'linear', secret: SECRET };
  const bodyAt = (at: number) =>
    JSON.stringify({ action: 'create', type: 'Issue', webhookId: 'wh_1', webhookTimestamp: at });
  const sign = (text: string) => createHmac('sha256', SECRET).update(text).digest('hex');

  it('accepts the hex HMAC of the raw body with a timestamp within a minute, either way', () => {
    for (const at of [NOW, NOW - 60_000, NOW + 60_000]) {
      const body = bodyAt(at);
      expect(reasonOf(settings, request({ 'linear-signature': sign(body) }, body))).toBeUndefined();
    }
  });

  it('refuses a signed body whose timestamp is more than a minute off, or missing', () => {
    for (const at of [NOW - 60_001, NOW + 60_001]) {
      const body = bodyAt(at);
      expect(reasonOf(settings, request({ 'linear-signature': sign(body) }, body))).toBe(
        'webhookTimestamp is outside the 60 s tolerance',
      );
    }
    const bare = '{"action":"create"}';
    expect(reasonOf(settings, request({ 'linear-signature': sign(bare) }, bare))).toBe(
      'the body has no webhookTimestamp (unix milliseconds)',
    );
  });

  it('checks the signature first: a bad one is a mismatch whatever the timestamp', () => {
    const body = bodyAt(NOW - 3_600_000);
    expect(reasonOf(settings, request({ 'linear-signature': sign(`${body} `) }, body))).toBe(
      'signature does not match',
    );
    expect(reasonOf(settings, request({ 'linear-signature': 'zz' }, body))).toBe(
      'malformed Linear-Signature header (expected <hex>)',
    );
  });

  it('takes webhookId at webhookTimestamp as the delivery id', () => {
    expect(deliveryIdOf('linear', request({}, bodyAt(NOW)))).toBe(`wh_1@${NOW}`);
    expect(deliveryIdOf('linear', request({}, '{"webhookId":"wh_1"}'))).toBeUndefined();
  });
});

describe('hmac (any header, hash and encoding)', () => {
  const body = '{"event":"build.finished"}';

  it('checks each algorithm and encoding, with and without a prefix', () => {
    for (const algorithm of ['sha1', 'sha256', 'sha512'] as const) {
      for (const encoding of ['hex', 'base64'] as const) {
        const digest = createHmac(algorithm, SECRET).update(body).digest(encoding);
        const settings = verifySettingsSchema.parse({
          kind: 'hmac',
          secret: SECRET,
          header: 'X-Signature',
          algorithm,
          encoding,
          prefix: `${algorithm}=`,
        });
        expect(
          reasonOf(settings, request({ 'x-signature': `${algorithm}=${digest}` }, body)),
        ).toBeUndefined();
        expect(reasonOf(settings, request({ 'x-signature': digest }, body))).toBe(
          `malformed X-Signature header (expected ${algorithm}=<${encoding}>)`,
        );
      }
    }
  });

  it('defaults to hex SHA-256 without a prefix, upper-case hex accepted', () => {
    const settings = verifySettingsSchema.parse({ kind: 'hmac', secret: SECRET, header: 'X-Hub' });
    const hex = createHmac('sha256', SECRET).update(body).digest('hex');
    expect(reasonOf(settings, request({ 'x-hub': hex.toUpperCase() }, body))).toBeUndefined();
    expect(reasonOf(settings, request({ 'x-hub': hex }, `${body}\n`))).toBe('signature does not match');
  });

  it('has no delivery id of its own', () => {
    expect(deliveryIdOf('hmac', request({ 'x-delivery': '1' }, body))).toBeUndefined();
  });
});

describe('the verify settings', () => {
  it('refuses an unknown kind, naming the known ones', () => {
    const parsed = verifySettingsSchema.safeParse({ kind: 'bitbucket', secret: SECRET });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toMatch(
      /^kind must be one of github, stripe, slack, standard-webhooks, gitlab, shopify, linear, hmac$/,
    );
  });

  it('refuses a key another kind has (strict per kind) and an hmac without its header', () => {
    expect(verifySettingsSchema.safeParse({ kind: 'github', secret: SECRET, header: 'X-Sig' }).success).toBe(
      false,
    );
    expect(verifySettingsSchema.safeParse({ kind: 'hmac', secret: SECRET }).success).toBe(false);
    expect(verifySettingsSchema.safeParse({ kind: 'hmac', secret: SECRET, header: 'X Sig' }).success).toBe(
      false,
    );
  });
});
