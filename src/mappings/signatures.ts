/**
 * Provider webhook signature verification for a mapping's `verify: {kind, secret}`
 * (docs/mappings.md, "Signatures"). Each scheme follows its provider's published documentation:
 *
 * - github: docs.github.com "Validating webhook deliveries" — `X-Hub-Signature-256:
 *   sha256=<hex HMAC-SHA256(secret, body)>`; no timestamp, so no replay window.
 * - stripe: docs.stripe.com "Verify webhook signatures manually" — `Stripe-Signature:
 *   t=<unix>,v1=<hex>[,v1=…][,v0=…]` over `${t}.${body}`, keyed with the endpoint
 *   secret string as-is (`whsec_…` included, as Stripe's own libraries do).
 * - slack: api.slack.com "Verifying requests from Slack" — `X-Slack-Signature:
 *   v0=<hex HMAC-SHA256(secret, "v0:" + ts + ":" + body)>` with `X-Slack-Request-Timestamp`.
 * - standard-webhooks: the Standard Webhooks spec (standard-webhooks.md, "Signature
 *   scheme" / "Webhook headers") — `webhook-signature` is a space-separated list of
 *   `v1,<base64>` over `${webhook-id}.${webhook-timestamp}.${body}`, keyed with the
 *   base64-decoded bytes of `whsec_<base64>`.
 *
 * The MAC is always computed over the raw bytes as received (never a re-serialised
 * or string-decoded body), and every comparison is constant time. Refusal reasons
 * name the header and the problem only: never the secret, never the expected value.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export type VerifyKind = 'github' | 'stripe' | 'slack' | 'standard-webhooks';

export interface VerifyInput {
  kind: VerifyKind;
  secret: string;
  headers: IncomingHttpHeaders;
  /** Raw bytes as received. */
  body: Buffer;
  /** Current time in ms. */
  now: number;
}

export type VerifyResult = { ok: true } | { ok: false; reason: string };

/** Replay window for the timestamped schemes (Stripe's default, Slack's and Standard Webhooks' 5 min). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

const OK: VerifyResult = { ok: true };
const fail = (reason: string): VerifyResult => ({ ok: false, reason });
const MISMATCH = fail('signature does not match');

export function verifySignature(input: VerifyInput): VerifyResult {
  // An empty key is public knowledge, so anyone could sign with it: refuse
  // rather than "verify" against nothing (e.g. an unset environment variable).
  if (typeof input.secret !== 'string' || input.secret.length === 0) {
    return fail('no signature secret is configured for this hook');
  }
  switch (input.kind) {
    case 'github':
      return verifyGithub(input);
    case 'stripe':
      return verifyStripe(input);
    case 'slack':
      return verifySlack(input);
    case 'standard-webhooks':
      return verifyStandardWebhooks(input);
    default:
      // The config layer validates `kind`, but a stray value must fail closed.
      return fail(`unsupported signature kind "${String(input.kind)}"`);
  }
}

// ── schemes ────────────────────────────────────────────────────────────────

function verifyGithub({ secret, headers, body }: VerifyInput): VerifyResult {
  const name = 'X-Hub-Signature-256';
  const header = readHeader(headers, name);
  if (!header.ok) return header;
  // Only the SHA-256 header is checked: GitHub's docs keep X-Hub-Signature
  // (SHA-1) for legacy only and recommend the SHA-256 one.
  const match = /^sha256=([0-9a-fA-F]+)$/.exec(header.value);
  if (!match) return fail(`malformed ${name} header (expected sha256=<hex>)`);
  const expected = hmacSha256(secret, [body]).toString('hex');
  // Hex is case-insensitive; GitHub sends lower case.
  return safeEqual((match[1] as string).toLowerCase(), expected) ? OK : MISMATCH;
}

function verifyStripe({ secret, headers, body, now }: VerifyInput): VerifyResult {
  const name = 'Stripe-Signature';
  const header = readHeader(headers, name);
  if (!header.ok) return header;
  // Stripe's recipe: split on ',' then each element on the first '='; `t` is the
  // timestamp, every `v1` is a candidate (several during secret rotation), and
  // other schemes (v0 = test-mode legacy) are discarded.
  let timestamp: string | undefined;
  const candidates: string[] = [];
  for (const element of header.value.split(',')) {
    const eq = element.indexOf('=');
    if (eq <= 0) return fail(`malformed ${name} header (expected t=<unix seconds>,v1=<hex>)`);
    const key = element.slice(0, eq);
    const value = element.slice(eq + 1);
    if (key === 't') {
      // Two timestamps would make it ambiguous which one was signed.
      if (timestamp !== undefined) return fail(`malformed ${name} header (more than one t= element)`);
      timestamp = value;
    } else if (key === 'v1') {
      candidates.push(value.toLowerCase());
    }
  }
  if (timestamp === undefined || !/^\d+$/.test(timestamp)) {
    return fail(`malformed ${name} header (expected t=<unix seconds>,v1=<hex>)`);
  }
  if (candidates.length === 0) return fail(`${name} header has no v1 signature`);
  const stale = checkTimestamp(timestamp, now);
  if (stale) return stale;
  const expected = hmacSha256(secret, [`${timestamp}.`, body]).toString('hex');
  // Compare against every candidate (no early exit) so timing does not reveal
  // which position matched.
  let matched = false;
  for (const candidate of candidates) matched = safeEqual(candidate, expected) || matched;
  return matched ? OK : MISMATCH;
}

function verifySlack({ secret, headers, body, now }: VerifyInput): VerifyResult {
  const tsName = 'X-Slack-Request-Timestamp';
  const sigName = 'X-Slack-Signature';
  const ts = readHeader(headers, tsName);
  if (!ts.ok) return ts;
  const sig = readHeader(headers, sigName);
  if (!sig.ok) return sig;
  if (!/^\d+$/.test(ts.value)) return fail(`malformed ${tsName} header (expected unix seconds)`);
  // v0 is the only version Slack documents; a future version is not guessed at.
  const match = /^v0=([0-9a-fA-F]+)$/.exec(sig.value);
  if (!match) return fail(`malformed ${sigName} header (expected v0=<hex>)`);
  // Slack: "If the request timestamp is more than five minutes from local time, it
  // could be a replay attack, so let's ignore it" — checked in both directions.
  const stale = checkTimestamp(ts.value, now);
  if (stale) return stale;
  const expected = hmacSha256(secret, [`v0:${ts.value}:`, body]).toString('hex');
  return safeEqual((match[1] as string).toLowerCase(), expected) ? OK : MISMATCH;
}

function verifyStandardWebhooks({ secret, headers, body, now }: VerifyInput): VerifyResult {
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
  const key = standardWebhooksKey(secret);
  if (!key) return fail('the standard-webhooks secret is not valid whsec_<base64>');
  const stale = checkTimestamp(ts.value, now);
  if (stale) return stale;
  const expected = hmacSha256(key, [`${id.value}.${ts.value}.`, body]).toString('base64');
  // Compare the base64 text exactly (as the reference libraries do) rather than
  // decoding the candidate: Node's base64 decoder skips junk characters, and a
  // strict text comparison keeps one accepted spelling per signature.
  let matched = false;
  for (const candidate of candidates) matched = safeEqual(candidate, expected) || matched;
  return matched ? OK : MISMATCH;
}

// ── helpers ────────────────────────────────────────────────────────────────

type HeaderRead = { ok: true; value: string } | { ok: false; reason: string };

/**
 * One header value by case-insensitive name. Node lower-cases incoming names,
 * but callers (tests, transforms) may hand in any casing. A repeated header is
 * refused: which copy was signed would be ambiguous.
 */
function readHeader(headers: IncomingHttpHeaders, name: string): HeaderRead {
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
function checkTimestamp(ts: string, now: number): VerifyResult | undefined {
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

function hmacSha256(key: string | Buffer, parts: Array<string | Buffer>): Buffer {
  const mac = createHmac('sha256', key);
  // Strings here are ASCII prefixes (timestamps, ids); the body stays raw bytes.
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** Constant-time equality of two ASCII strings; a length mismatch is a plain `false`. */
function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Key bytes of a Standard Webhooks secret. The spec serialises symmetric secrets
 * as `whsec_` + base64; without the prefix the whole string is read as base64, as
 * the reference libraries do (`new Webhook("MfKQ…")` and `new Webhook("whsec_MfKQ…")`
 * verify alike). Invalid base64 or an empty key is refused instead of being
 * silently decoded to some other key by Node's lenient decoder.
 */
function standardWebhooksKey(secret: string): Buffer | undefined {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.replace(/=+$/, '').length % 4 === 1) {
    return undefined;
  }
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 ? key : undefined;
}
