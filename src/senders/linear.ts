/**
 * Linear (linear.app/developers, "Webhooks", "Securing webhooks"): `Linear-Signature` is the
 * hex HMAC-SHA256 of the raw body, keyed with the webhook's signing secret, and the body's
 * `webhookTimestamp` (unix milliseconds) must be within a minute of now, which Linear's own
 * verifier enforces against replays. A delivery is `webhookId` at `webhookTimestamp`.
 */
import { z } from 'zod';
import { hmacSha256, MISMATCH, readHeader, safeEqual } from '../http/webhook-signature.js';
import { bodyField } from './fields.js';
import { secretSchema } from './secret.js';
import type { SenderScheme, VerifyResult } from './types.js';

const settings = z.strictObject({ kind: z.literal('linear'), secret: secretSchema });

/** How far `webhookTimestamp` may be from now, either way. */
export const LINEAR_TOLERANCE_MS = 60_000;

function checkWebhookTimestamp(payload: unknown, now: number): VerifyResult {
  const stamp = Number(bodyField(payload, 'webhookTimestamp'));
  if (!Number.isSafeInteger(stamp)) {
    return { ok: false, reason: 'the body has no webhookTimestamp (unix milliseconds)' };
  }
  if (Math.abs(now - stamp) > LINEAR_TOLERANCE_MS) {
    return { ok: false, reason: `webhookTimestamp is outside the ${LINEAR_TOLERANCE_MS / 1000} s tolerance` };
  }
  return { ok: true };
}

export const linear: SenderScheme<typeof settings> = {
  kind: 'linear',
  settings,
  verify({ secret }, { headers, body, payload, now }) {
    const header = readHeader(headers, 'Linear-Signature');
    if (!header.ok) return header;
    if (!/^[0-9a-fA-F]+$/.test(header.value)) {
      return { ok: false, reason: 'malformed Linear-Signature header (expected <hex>)' };
    }
    const expected = hmacSha256(secret, [body]).toString('hex');
    if (!safeEqual(header.value.toLowerCase(), expected)) return MISMATCH;
    // After the MAC: the timestamp is inside the signed body, so only a signed one counts.
    return checkWebhookTimestamp(payload, now);
  },
  deliveryId({ payload }) {
    const id = bodyField(payload, 'webhookId');
    const at = bodyField(payload, 'webhookTimestamp');
    return id === undefined || at === undefined ? undefined : `${id}@${at}`;
  },
};
