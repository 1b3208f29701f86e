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
 *   base64-decoded bytes of `whsec_<base64>`. The gateway signs its completion
 *   callbacks with the same scheme, so it lives in one module, ../http/webhook-signature.ts.
 *
 * The MAC is always computed over the raw bytes as received (never a re-serialised
 * or string-decoded body), and every comparison is constant time. Refusal reasons
 * name the header and the problem only: never the secret, never the expected value.
 */
import type { IncomingHttpHeaders } from 'node:http';
import {
  checkTimestamp,
  hmacSha256,
  MISMATCH,
  readHeader,
  safeEqual,
  type VerifyResult,
  verify as verifyStandardWebhooks,
} from '../http/webhook-signature.js';

export { SIGNATURE_TOLERANCE_SECONDS, type VerifyResult } from '../http/webhook-signature.js';

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

const OK: VerifyResult = { ok: true };
const fail = (reason: string): VerifyResult => ({ ok: false, reason });

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
      return verifyStandardWebhooks(input.secret, input.headers, input.body, input.now);
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
