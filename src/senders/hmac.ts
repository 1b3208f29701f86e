/**
 * Any sender that signs the raw body with an HMAC in one header (docs/senders.md, "Other
 * senders"): the header's name, the hash, the encoding and an optional prefix such as
 * `sha256=` are the mapping's. No timestamp and no delivery id: `dedupe` names one.
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { MISMATCH, readHeader, safeEqual } from '../http/webhook-signature.js';
import { secretSchema } from './secret.js';
import type { SenderScheme } from './types.js';

const settings = z.strictObject({
  kind: z.literal('hmac'),
  secret: secretSchema,
  header: z.string().regex(/^[A-Za-z0-9-]+$/, 'must be a header name'),
  algorithm: z.enum(['sha1', 'sha256', 'sha512']).default('sha256'),
  encoding: z.enum(['hex', 'base64']).default('hex'),
  prefix: z.string().max(32).optional(),
});

export const hmac: SenderScheme<typeof settings> = {
  kind: 'hmac',
  settings,
  verify({ secret, header: name, algorithm, encoding, prefix = '' }, { headers, body }) {
    const header = readHeader(headers, name);
    if (!header.ok) return header;
    if (!header.value.startsWith(prefix)) {
      return { ok: false, reason: `malformed ${name} header (expected ${prefix}<${encoding}>)` };
    }
    const given = header.value.slice(prefix.length);
    const expected = createHmac(algorithm, secret).update(body).digest(encoding);
    // Hex is case-insensitive; base64 is compared as text.
    return safeEqual(encoding === 'hex' ? given.toLowerCase() : given, expected) ? { ok: true } : MISMATCH;
  },
};
