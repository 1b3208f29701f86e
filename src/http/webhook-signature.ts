/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is
 * `whsec_<base64>`, the key its base64-decoded bytes; the signature of a
 * message is `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`.
 */
import { createHmac } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
/** Below this the HMAC key is guessable in principle; the spec suggests 24 to 64 bytes. */
export const MIN_KEY_BYTES = 16;

/** The HMAC key of a `whsec_` secret, or why the secret is unusable. */
export function signingKey(secret: string): { ok: true; key: Buffer } | { ok: false; problem: string } {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : undefined;
  if (encoded === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 === 1) {
    return { ok: false, problem: 'must be "whsec_" followed by the base64 of a random key' };
  }
  const key = Buffer.from(encoded, 'base64');
  if (key.length < MIN_KEY_BYTES) {
    return {
      ok: false,
      problem: `the key after "whsec_" must be at least ${MIN_KEY_BYTES} bytes (24-64 suggested)`,
    };
  }
  return { ok: true, key };
}

/** The `webhook-signature` header value for one attempt. */
export function sign(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers of one attempt. */
export function signedHeaders(key: Buffer, id: string, timestampSeconds: number, body: string) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': sign(key, id, timestampSeconds, body),
  };
}
