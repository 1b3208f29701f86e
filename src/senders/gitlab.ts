/**
 * GitLab (docs.gitlab.com, "Webhooks", "Secret token"): GitLab sends the secret token itself in
 * `X-Gitlab-Token`; there is no MAC, so the token is compared in constant time. GitLab keeps
 * `X-Gitlab-Event-UUID` the same when a delivery is retried or resent.
 */
import { z } from 'zod';
import { MISMATCH, readHeader, safeEqual } from '../http/webhook-signature.js';
import { headerValue } from './fields.js';
import { secretSchema } from './secret.js';
import type { SenderScheme } from './types.js';

const settings = z.strictObject({ kind: z.literal('gitlab'), secret: secretSchema });

export const gitlab: SenderScheme<typeof settings> = {
  kind: 'gitlab',
  settings,
  verify({ secret }, { headers }) {
    const header = readHeader(headers, 'X-Gitlab-Token');
    if (!header.ok) return header;
    return safeEqual(header.value, secret) ? { ok: true } : MISMATCH;
  },
  deliveryId: ({ headers }) => headerValue(headers, 'X-Gitlab-Event-UUID'),
};
