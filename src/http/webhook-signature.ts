/**
 * Standard Webhooks (https://www.standardwebhooks.com), both directions: the
 * completion callbacks sign with it (docs/callers.md, "What is sent") and a
 * mapping's `verify: {kind: "standard-webhooks"}` checks senders with it
 * (docs/senders.md, "Signed senders"). One secret parser serves both.
 *
 * The secret is `whsec_<base64>`, the HMAC key its base64-decoded bytes; the
 * signature of a message is `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`,
 * and `webhook-signature` may carry several space-separated entries (key rotation).
 * test/http/webhook-signature.test.ts checks sign and verify against the
 * reference `standardwebhooks` library.
 *
 * The small header, timestamp and comparison helpers are exported because the
 * other senders (src/senders/) refuse with the same words.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const SECRET_PREFIX = 'whsec_';
/**
 * Below this the HMAC key of the gateway's own callback secret is guessable in
 * principle; the spec suggests 24 to 64 bytes (docs/callers.md, "Configuration").
 * A sender's secret is the sender's choice and only has to be non-empty.
 */
export const MIN_KEY_BYTES = 16;
/** Replay window of the timestamped schemes: Standard Webhooks', Slack's and Stripe's default 5 min. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export type VerifyResult = { ok: true } | { ok: false; reason: string };
export type SecretParse = { ok: true; key: Buffer } | { ok: false; problem: string };

const OK: VerifyResult = { ok: true };
const fail = (reason: string): VerifyResult => ({ ok: false, reason });
export const MISMATCH: VerifyResult = fail('signature does not match');

// ── the secret ─────────────────────────────────────────────────────────────

/**
 * The key bytes of a Standard Webhooks secret. The spec writes symmetric
 * secrets as `whsec_` + base64; without the prefix the whole string is read as
 * base64, as the reference libraries do (`new Webhook("MfKQ…")` and
 * `new Webhook("whsec_MfKQ…")` sign alike). Invalid base64 or an empty key is
 * refused instead of being silently decoded to some other key by Node's
 * lenient decoder.
 */
export function parseSecret(secret: string): SecretParse {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.replace(/=+$/, '').length % 4 === 1) {
    return { ok: false, problem: 'must be "whsec_" followed by the base64 of a random key' };
  }
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) return { ok: false, problem: 'the key after "whsec_" is empty' };
  return { ok: true, key };
}

/**
 * The HMAC key of the gateway's own callback secret: written `whsec_<base64>`
 * (the documented form, which receivers' libraries expect to be handed), of at
 * least MIN_KEY_BYTES. A sender's secret (`parseSecret`) may leave the prefix out.
 */
export function signingKey(secret: string): SecretParse {
  if (!secret.startsWith(SECRET_PREFIX)) {
    return { ok: false, problem: 'must be "whsec_" followed by the base64 of a random key' };
  }
  const parsed = parseSecret(secret);
  if (parsed.ok && parsed.key.length < MIN_KEY_BYTES) {
    return {
      ok: false,
      problem: `must be "whsec_" followed by the base64 of a random key of at least ${MIN_KEY_BYTES} bytes (24-64 suggested)`,
    };
  }
  return parsed;
}

// ── signing ────────────────────────────────────────────────────────────────

/** The `webhook-signature` header value for one attempt. */
export function sign(key: Buffer, id: string, timestampSeconds: number, body: string | Buffer): string {
  return `v1,${mac(key, id, String(timestampSeconds), body)}`;
}

/** The base64 MAC over `<id>.<timestamp>.<body>`, the timestamp exactly as written in its header. */
function mac(key: Buffer, id: string, timestamp: string, body: string | Buffer): string {
  return hmacSha256(key, [`${id}.${timestamp}.`, body]).toString('base64');
}

/** The three Standard Webhooks headers of one attempt. */
export function signedHeaders(key: Buffer, id: string, timestampSeconds: number, body: string | Buffer) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': sign(key, id, timestampSeconds, body),
  };
}

// ── verifying ──────────────────────────────────────────────────────────────

/**
 * Checks a Standard Webhooks request: `webhook-id`, `webhook-timestamp` within
 * SIGNATURE_TOLERANCE_SECONDS of `now` (ms) either way, and at least one `v1,`
 * entry of `webhook-signature` equal to ours. The MAC covers the raw body bytes
 * as received. Reasons name the header and the problem only: never the secret,
 * never the expected value.
 */
export function verify(
  secret: string,
  headers: IncomingHttpHeaders,
  body: string | Buffer,
  now: number,
): VerifyResult {
  const id = readHeader(headers, 'webhook-id');
  if (!id.ok) return id;
  const ts = readHeader(headers, 'webhook-timestamp');
  if (!ts.ok) return ts;
  const sig = readHeader(headers, 'webhook-signature');
  if (!sig.ok) return sig;
  if (!/^\d+$/.test(ts.value)) return fail('malformed webhook-timestamp header (expected unix seconds)');
  // The list exists for zero-downtime key rotation; entries of other versions
  // (e.g. `v1a` asymmetric) are ignored, as the reference libraries do.
  const candidates: string[] = [];
  for (const entry of sig.value.split(' ')) {
    if (entry.startsWith('v1,')) candidates.push(entry.slice(3));
  }
  if (candidates.length === 0) {
    return fail('malformed webhook-signature header (no v1,<base64> entry)');
  }
  const key = parseSecret(secret);
  if (!key.ok) return fail('the standard-webhooks secret is not valid whsec_<base64>');
  const stale = checkTimestamp(ts.value, now);
  if (stale) return stale;
  const expected = mac(key.key, id.value, ts.value, body);
  // Compare the base64 text exactly (as the reference libraries do) rather than
  // decoding the candidate: Node's base64 decoder skips junk characters, and a
  // strict text comparison keeps one accepted spelling per signature. Every
  // candidate is compared (no early exit) so timing does not reveal which matched.
  let matched = false;
  for (const candidate of candidates) matched = safeEqual(candidate, expected) || matched;
  return matched ? OK : MISMATCH;
}

// ── helpers shared with the other sender schemes ───────────────────────────

export type HeaderRead = { ok: true; value: string } | { ok: false; reason: string };

/**
 * One header value by case-insensitive name. Node lower-cases incoming names,
 * but callers (tests, transforms) may hand in any casing. A repeated header is
 * refused: which copy was signed would be ambiguous.
 */
export function readHeader(headers: IncomingHttpHeaders, name: string): HeaderRead {
  const lower = name.toLowerCase();
  let raw = headers[lower];
  if (raw === undefined) {
    for (const key of Object.keys(headers)) {
      if (key.toLowerCase() === lower) {
        raw = headers[key];
        break;
      }
    }
  }
  if (Array.isArray(raw)) {
    if (raw.length > 1) return { ok: false, reason: `malformed ${name} header (sent more than once)` };
    raw = raw[0];
  }
  const value = typeof raw === 'string' ? raw.trim() : '';
  if (value === '') return { ok: false, reason: `missing ${name} header` };
  return { ok: true, value };
}

/** Refusal when `ts` (unix seconds) is more than the tolerance away from `now` (ms), else undefined. */
export function checkTimestamp(ts: string, now: number): VerifyResult | undefined {
  const skew = Math.floor(now / 1000) - Number(ts);
  if (skew > SIGNATURE_TOLERANCE_SECONDS) {
    return fail(`timestamp is outside the ${SIGNATURE_TOLERANCE_SECONDS} s tolerance (too old)`);
  }
  // Future stamps are refused too (Slack and Standard Webhooks check both ways;
  // stripe-node only checks age): a far-future stamp would stay replayable for long.
  if (-skew > SIGNATURE_TOLERANCE_SECONDS) {
    return fail(`timestamp is outside the ${SIGNATURE_TOLERANCE_SECONDS} s tolerance (in the future)`);
  }
  return undefined;
}

export function hmacSha256(key: string | Buffer, parts: Array<string | Buffer>): Buffer {
  const mac = createHmac('sha256', key);
  // Strings are UTF-8 encoded (ids, timestamps, a callback body); a received body stays raw bytes.
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** Constant-time equality of two ASCII strings; a length mismatch is a plain `false`. */
export function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
