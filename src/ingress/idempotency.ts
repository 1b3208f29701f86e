/**
 * Idempotency keys (docs/endpoints.md, "Idempotency"): `Idempotency-Key`, else Standard Webhooks'
 * `webhook-id`; the same key on the same hook path within 24 h replays the first
 * answer, a different body under that key is a 409.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { invalidPayload } from '../http/errors.js';
import type { IdempotencyClaim } from '../store/types.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const MAX_KEY_LENGTH = 255;

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
