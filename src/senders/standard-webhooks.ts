/**
 * Standard Webhooks (standardwebhooks.com): `webhook-id`, `webhook-timestamp` and
 * `webhook-signature` (`v1,<base64>` entries). The gateway signs its own callbacks with the
 * same scheme, so the check lives beside the signing in ../http/webhook-signature.ts. The
 * spec keeps `webhook-id` the same on every attempt of a message.
 */
import { z } from 'zod';
import { verify } from '../http/webhook-signature.js';
import { headerValue } from './fields.js';
import { secretSchema } from './secret.js';
import type { SenderScheme } from './types.js';

const settings = z.strictObject({ kind: z.literal('standard-webhooks'), secret: secretSchema });

export const standardWebhooks: SenderScheme<typeof settings> = {
  kind: 'standard-webhooks',
  settings,
  verify: ({ secret }, { headers, body, now }) => verify(secret, headers, body, now),
  deliveryId: ({ headers }) => headerValue(headers, 'webhook-id'),
};
