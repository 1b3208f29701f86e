/**
 * Idempotency keys (docs/endpoints.md, "Idempotency"): `Idempotency-Key`, else Standard Webhooks'
 * `webhook-id`; the same key on the same hook path within 24 h replays the first
 * answer, a different body under that key is a 409. A sender's delivery id (docs/senders.md,
 * "Redeliveries") comes first and is matched by the id alone: senders change fields between
 * attempts, so any body under it is a replay.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { invalidPayload } from '../http/errors.js';
import type { IdempotencyClaim } from '../store/types.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const MAX_KEY_LENGTH = 255;

/**
 * Every delivery id's claim carries this in place of its body's hash, so the store's
 * replay-or-conflict check always finds the same body: a redelivery is a replay.
 */
const ANY_BODY = 'delivery';

/** The claim of a sender's delivery id: a key of its own kind (`delivery:`), long ids hashed. */
export function deliveryClaim(scope: string, deliveryId: string, now: number): IdempotencyClaim {
  const key =
    deliveryId.length <= MAX_KEY_LENGTH - 'delivery:'.length
      ? `delivery:${deliveryId}`
      : `delivery:sha256:${createHash('sha256').update(deliveryId).digest('base64')}`;
  return { scope, key, bodyHash: ANY_BODY, now, ttlMs: IDEMPOTENCY_TTL_MS };
}

export function idempotencyClaim(
  headers: IncomingHttpHeaders,
  scope: string,
  body: Buffer,
  now: number,
): IdempotencyClaim | undefined {
  const fromHeader = headers['idempotency-key'] !== undefined ? 'Idempotency-Key' : 'webhook-id';
  const key = headers['idempotency-key'] ?? headers['webhook-id'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw invalidPayload(fromHeader, `header must be 1-${MAX_KEY_LENGTH} characters`);
  }
  const bodyHash = createHash('sha256').update(body).digest('base64');
  return { scope, key, bodyHash, now, ttlMs: IDEMPOTENCY_TTL_MS };
}
