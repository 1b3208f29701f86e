/**
 * The one Standard Webhooks module (src/http/webhook-signature.ts) against the
 * reference `standardwebhooks` library: what the gateway signs (completion
 * callbacks, docs/callers.md "Verifying it") the library verifies, what the
 * library signs (a sender of a `standard-webhooks` mapping, README
 * "Signatures") the gateway verifies, and a change to the body, the timestamp
 * or the id fails both.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  MIN_KEY_BYTES,
  parseSecret,
  SIGNATURE_TOLERANCE_SECONDS,
  sign,
  signedHeaders,
  signingKey,
  verify,
} from '../../src/http/webhook-signature.js';

const nowS = () => Math.floor(Date.now() / 1000);
const secretOf = (key: Buffer, prefixed = true) => `${prefixed ? 'whsec_' : ''}${key.toString('base64')}`;

/** Our verdict and the library's on the same request. */
function verdicts(secret: string, headers: Record<string, string>, body: string) {
  const ours = verify(secret, headers as IncomingHttpHeaders, Buffer.from(body), Date.now()).ok;
  let library = true;
  try {
    new Webhook(secret).verify(body, headers, { jsonParse: false });
  } catch {
    library = false;
  }
  return { ours, library };
}

const BOTH_ACCEPT = { ours: true, library: true };
const BOTH_REFUSE = { ours: false, library: false };

function ourHeaders(secret: string, id: string, ts: number, body: string) {
  const key = parseSecret(secret);
  if (!key.ok) throw new Error(key.problem);
  return signedHeaders(key.key, id, ts, body);
}

function libraryHeaders(secret: string, id: string, ts: number, body: string) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': new Webhook(secret).sign(id, new Date(ts * 1000), body),
  };
}

// Payloads: any Unicode text (the library signs strings as UTF-8, as we do);
// ids: what senders use in practice, no spaces or commas.
const payload = fc.string({ unit: 'grapheme', maxLength: 400 });
const msgId = fc.stringMatching(/^msg_[A-Za-z0-9_-]{1,32}$/);
const keyBytes = fc.uint8Array({ minLength: 24, maxLength: 64 }).map((a) => Buffer.from(a));

describe('the secret', () => {
  it('reads whsec_<base64> and bare <base64> to the same key, as the library does', () => {
    const key = randomBytes(32);
    for (const secret of [secretOf(key), secretOf(key, false)]) {
      expect(parseSecret(secret)).toEqual({ ok: true, key });
      // The library takes both spellings too: its signature is ours.
      expect(new Webhook(secret).sign('msg_1', new Date(0), 'x')).toBe(sign(key, 'msg_1', 0, 'x'));
    }
  });

  it('refuses what is not base64 or decodes to nothing', () => {
    for (const secret of [
      '',
      'whsec_',
      'whsec_==',
      'whsec_A',
      'whsec_not base64!',
      'hunter2-plain-text',
      'whsec_AAAAA=',
    ]) {
      expect(parseSecret(secret).ok).toBe(false);
    }
  });

  it('the callback signing key is written whsec_<base64>, of at least MIN_KEY_BYTES', () => {
    expect(signingKey(secretOf(randomBytes(MIN_KEY_BYTES - 1))).ok).toBe(false);
    expect(signingKey(secretOf(randomBytes(MIN_KEY_BYTES))).ok).toBe(true);
    // The gateway's own secret keeps its documented form; a sender's may leave the prefix out.
    expect(signingKey(secretOf(randomBytes(32), false)).ok).toBe(false);
    expect(parseSecret(secretOf(randomBytes(32), false)).ok).toBe(true);
    // A sender's key is the sender's choice: any non-empty key verifies.
    expect(parseSecret(secretOf(randomBytes(1))).ok).toBe(true);
  });
});

describe('against the standardwebhooks library', () => {
  it('the reference known answer: the library test vector signs and verifies alike', () => {
    // "sign function works" in standard-webhooks/libraries/javascript/src/webhook.test.ts.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const key = parseSecret(secret);
    if (!key.ok) throw new Error(key.problem);
    const expected = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
    expect(sign(key.key, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')).toBe(expected);
    const headers = {
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': expected,
    };
    expect(verify(secret, headers, Buffer.from('{"test": 2432232314}'), 1614265330_000)).toEqual({
      ok: true,
    });
  });

  it('property: what we sign the library verifies, and what the library signs we verify', () => {
    fc.assert(
      fc.property(keyBytes, fc.boolean(), msgId, payload, (key, prefixed, id, body) => {
        const secret = secretOf(key, prefixed);
        const ts = nowS();
        expect(verdicts(secret, ourHeaders(secret, id, ts, body), body)).toEqual(BOTH_ACCEPT);
        expect(verdicts(secret, libraryHeaders(secret, id, ts, body), body)).toEqual(BOTH_ACCEPT);
        // Same key, id, timestamp and body: the same signature, byte for byte.
        expect(ourHeaders(secret, id, ts, body)).toEqual(libraryHeaders(secret, id, ts, body));
      }),
      { numRuns: 200 },
    );
  });

  it('property: a changed body, timestamp, id or key fails both', () => {
    fc.assert(
      fc.property(
        keyBytes,
        msgId,
        payload,
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 200 }),
        (key, id, body, extra, shift) => {
          const secret = secretOf(key);
          const ts = nowS();
          for (const signed of [ourHeaders(secret, id, ts, body), libraryHeaders(secret, id, ts, body)]) {
            expect(verdicts(secret, signed, body + extra)).toEqual(BOTH_REFUSE);
            // Still inside the tolerance, so only the signature can refuse it.
            expect(verdicts(secret, { ...signed, 'webhook-timestamp': String(ts - shift) }, body)).toEqual(
              BOTH_REFUSE,
            );
            expect(verdicts(secret, { ...signed, 'webhook-id': `${id}x` }, body)).toEqual(BOTH_REFUSE);
            expect(verdicts(secretOf(randomBytes(32)), signed, body)).toEqual(BOTH_REFUSE);
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('several space-separated signatures: one valid v1 entry is enough for both (key rotation)', () => {
    const secret = secretOf(randomBytes(32));
    const old = secretOf(randomBytes(32));
    const ts = nowS();
    const body = '{"type":"run.finished"}';
    const valid = ourHeaders(secret, 'msg_rot', ts, body)['webhook-signature'];
    const stale = libraryHeaders(old, 'msg_rot', ts, body)['webhook-signature'];
    const base = { 'webhook-id': 'msg_rot', 'webhook-timestamp': String(ts) };
    expect(verdicts(secret, { ...base, 'webhook-signature': `${stale} ${valid}` }, body)).toEqual(
      BOTH_ACCEPT,
    );
    expect(verdicts(secret, { ...base, 'webhook-signature': `${valid} ${stale}` }, body)).toEqual(
      BOTH_ACCEPT,
    );
    // The right bytes under another version label count for neither.
    expect(verdicts(secret, { ...base, 'webhook-signature': `v2,${valid.slice(3)}` }, body)).toEqual(
      BOTH_REFUSE,
    );
    expect(verdicts(secret, { ...base, 'webhook-signature': stale }, body)).toEqual(BOTH_REFUSE);
  });

  it('the same replay window: inside it both accept, outside it (either way) both refuse', () => {
    const secret = secretOf(randomBytes(32));
    const body = '{}';
    // A margin of 10 s keeps the two clocks reads on the same side of the edge.
    const inside = SIGNATURE_TOLERANCE_SECONDS - 10;
    const outside = SIGNATURE_TOLERANCE_SECONDS + 10;
    for (const ts of [nowS() - inside, nowS() + inside]) {
      expect(verdicts(secret, ourHeaders(secret, 'msg_t', ts, body), body)).toEqual(BOTH_ACCEPT);
    }
    for (const ts of [nowS() - outside, nowS() + outside]) {
      expect(verdicts(secret, ourHeaders(secret, 'msg_t', ts, body), body)).toEqual(BOTH_REFUSE);
      expect(verdicts(secret, libraryHeaders(secret, 'msg_t', ts, body), body)).toEqual(BOTH_REFUSE);
    }
  });

  it('missing headers refuse in both', () => {
    const secret = secretOf(randomBytes(32));
    const signed = ourHeaders(secret, 'msg_m', nowS(), 'x');
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const { [name]: _dropped, ...rest } = signed;
      expect(verdicts(secret, rest, 'x')).toEqual(BOTH_REFUSE);
    }
  });
});
