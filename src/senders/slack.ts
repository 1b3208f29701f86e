/**
 * Slack (api.slack.com, "Verifying requests from Slack"): `X-Slack-Signature: v0=<hex
 * HMAC-SHA256(secret, "v0:" + ts + ":" + body)>` with `X-Slack-Request-Timestamp`. An Events
 * API retry keeps its `event_id`.
 */
import { z } from 'zod';
import { checkTimestamp, hmacSha256, MISMATCH, readHeader, safeEqual } from '../http/webhook-signature.js';
import { bodyField } from './fields.js';
import { secretSchema } from './secret.js';
import type { SenderScheme } from './types.js';

const settings = z.strictObject({ kind: z.literal('slack'), secret: secretSchema });

export const slack: SenderScheme<typeof settings> = {
  kind: 'slack',
  settings,
  verify({ secret }, { headers, body, now }) {
    const tsName = 'X-Slack-Request-Timestamp';
    const sigName = 'X-Slack-Signature';
    const ts = readHeader(headers, tsName);
    if (!ts.ok) return ts;
    const sig = readHeader(headers, sigName);
    if (!sig.ok) return sig;
    if (!/^\d+$/.test(ts.value))
      return { ok: false, reason: `malformed ${tsName} header (expected unix seconds)` };
    // v0 is the only version Slack documents; a future version is not guessed at.
    const match = /^v0=([0-9a-fA-F]+)$/.exec(sig.value);
    if (!match) return { ok: false, reason: `malformed ${sigName} header (expected v0=<hex>)` };
    // Slack: a timestamp more than five minutes from local time could be a replay; checked
    // in both directions.
    const stale = checkTimestamp(ts.value, now);
    if (stale) return stale;
    const expected = hmacSha256(secret, [`v0:${ts.value}:`, body]).toString('hex');
    return safeEqual((match[1] as string).toLowerCase(), expected) ? { ok: true } : MISMATCH;
  },
  deliveryId: ({ payload }) => bodyField(payload, 'event_id'),
};
