/**
 * Shopify (shopify.dev, "Verify webhooks"): `X-Shopify-Hmac-Sha256` is the base64
 * HMAC-SHA256 of the raw body, keyed with the app's client secret. A retried delivery keeps
 * `X-Shopify-Webhook-Id`.
 */
import { z } from 'zod';
import { hmacSha256, MISMATCH, readHeader, safeEqual } from '../http/webhook-signature.js';
import { headerValue } from './fields.js';
import { secretSchema } from './secret.js';
import type { SenderScheme } from './types.js';

const settings = z.strictObject({ kind: z.literal('shopify'), secret: secretSchema });

export const shopify: SenderScheme<typeof settings> = {
  kind: 'shopify',
  settings,
  verify({ secret }, { headers, body }) {
    const header = readHeader(headers, 'X-Shopify-Hmac-Sha256');
    if (!header.ok) return header;
    // Base64 is compared as text (one accepted spelling per signature), as Shopify's own
    // libraries do: Node's decoder would skip junk characters.
    return safeEqual(header.value, hmacSha256(secret, [body]).toString('base64')) ? { ok: true } : MISMATCH;
  },
  deliveryId: ({ headers }) => headerValue(headers, 'X-Shopify-Webhook-Id'),
};
