/**
 * GitHub (docs.github.com, "Validating webhook deliveries"): `X-Hub-Signature-256:
 * sha256=<hex HMAC-SHA256(secret, body)>`, no timestamp, so no replay window of its own: a
 * redelivery is recognised by `X-GitHub-Delivery`, the same on every redelivery.
 */
import { z } from 'zod';
import { hmacSha256, MISMATCH, readHeader, safeEqual } from '../http/webhook-signature.js';
import { headerValue } from './fields.js';
import { secretSchema } from './secret.js';
import type { SenderScheme } from './types.js';

const settings = z.strictObject({ kind: z.literal('github'), secret: secretSchema });

export const github: SenderScheme<typeof settings> = {
  kind: 'github',
  settings,
  verify({ secret }, { headers, body }) {
    const name = 'X-Hub-Signature-256';
    const header = readHeader(headers, name);
    if (!header.ok) return header;
    // Only the SHA-256 header is checked: GitHub's docs keep X-Hub-Signature (SHA-1) for
    // legacy only and recommend the SHA-256 one.
    const match = /^sha256=([0-9a-fA-F]+)$/.exec(header.value);
    if (!match) return { ok: false, reason: `malformed ${name} header (expected sha256=<hex>)` };
    const expected = hmacSha256(secret, [body]).toString('hex');
    // Hex is case-insensitive; GitHub sends lower case.
    return safeEqual((match[1] as string).toLowerCase(), expected) ? { ok: true } : MISMATCH;
  },
  deliveryId: ({ headers }) => headerValue(headers, 'X-GitHub-Delivery'),
};
