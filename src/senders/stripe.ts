/**
 * Stripe (docs.stripe.com, "Verify webhook signatures manually"): `Stripe-Signature:
 * t=<unix>,v1=<hex>[,v1=…][,v0=…]` over `${t}.${body}`, keyed with the endpoint secret string
 * as-is (`whsec_…` included, as Stripe's own libraries do). A retried event keeps its `id`.
 */
import { z } from 'zod';
import { checkTimestamp, hmacSha256, MISMATCH, readHeader, safeEqual } from '../http/webhook-signature.js';
import { bodyField } from './fields.js';
import { secretSchema } from './secret.js';
import type { SenderScheme, VerifyResult } from './types.js';

const settings = z.strictObject({ kind: z.literal('stripe'), secret: secretSchema });
const NAME = 'Stripe-Signature';
const MALFORMED = `malformed ${NAME} header (expected t=<unix seconds>,v1=<hex>)`;

/**
 * Stripe's recipe: split on ',' then each element on the first '='; `t` is the timestamp,
 * every `v1` is a candidate (several during secret rotation), other schemes (v0, test-mode
 * legacy) are discarded.
 */
function parse(value: string): { timestamp: string; candidates: string[] } | { reason: string } {
  let timestamp: string | undefined;
  const candidates: string[] = [];
  for (const element of value.split(',')) {
    const eq = element.indexOf('=');
    if (eq <= 0) return { reason: MALFORMED };
    const key = element.slice(0, eq);
    if (key === 't') {
      // Two timestamps would make it ambiguous which one was signed.
      if (timestamp !== undefined) return { reason: `malformed ${NAME} header (more than one t= element)` };
      timestamp = element.slice(eq + 1);
    } else if (key === 'v1') {
      candidates.push(element.slice(eq + 1).toLowerCase());
    }
  }
  if (timestamp === undefined || !/^\d+$/.test(timestamp)) return { reason: MALFORMED };
  if (candidates.length === 0) return { reason: `${NAME} header has no v1 signature` };
  return { timestamp, candidates };
}

export const stripe: SenderScheme<typeof settings> = {
  kind: 'stripe',
  settings,
  verify({ secret }, { headers, body, now }): VerifyResult {
    const header = readHeader(headers, NAME);
    if (!header.ok) return header;
    const parsed = parse(header.value);
    if ('reason' in parsed) return { ok: false, reason: parsed.reason };
    const stale = checkTimestamp(parsed.timestamp, now);
    if (stale) return stale;
    const expected = hmacSha256(secret, [`${parsed.timestamp}.`, body]).toString('hex');
    // Every candidate is compared (no early exit), so timing does not reveal which matched.
    let matched = false;
    for (const candidate of parsed.candidates) matched = safeEqual(candidate, expected) || matched;
    return matched ? { ok: true } : MISMATCH;
  },
  deliveryId: ({ payload }) => bodyField(payload, 'id'),
};
