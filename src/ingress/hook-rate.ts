/**
 * Per-hook request rates (docs/callers.md, "Per-hook limits"): a token bucket per hook, for all its
 * callers together. A bucket holds up to `perMinute` tokens (a minute's worth
 * may arrive at once) and refills continuously at `perMinute` per minute; a
 * request takes one token or is refused, and a refused request takes none.
 *
 * Buckets live in this process: on PostgreSQL each replica counts its own, so N
 * replicas let up to N × perMinute through (a shared counter would cost a
 * database round trip on every hook request). They outlive config reloads, so a
 * reload does not hand out a fresh minute's worth.
 */

import type { HookTarget } from '../hook-model/targets.js';
import { HttpError } from '../http/errors.js';

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms). */
  at: number;
}

/** Above this many buckets, full ones are dropped (a full bucket is the same as none). */
const MAX_BUCKETS = 10_000;
const MINUTE_MS = 60_000;

export class HookRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  /** Takes a token from `key`'s bucket, or throws 429 `hook_rate_limited` with Retry-After. */
  take(key: string, perMinute: number, now: number): void {
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_BUCKETS) this.sweep(now);
      bucket = { tokens: perMinute, at: now };
      this.buckets.set(key, bucket);
    } else {
      // min(): a lowered limit (config reload) applies at once.
      bucket.tokens = Math.min(perMinute, bucket.tokens + ((now - bucket.at) * perMinute) / MINUTE_MS);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    const waitMs = ((1 - bucket.tokens) * MINUTE_MS) / perMinute;
    throw new HttpError(
      'hook_rate_limited',
      `this hook takes at most ${perMinute} requests per minute; retry later`,
      { 'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))) },
    );
  }

  /** Drops buckets idle for a minute: whatever their limit, they have refilled (the same as none). */
  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (now - bucket.at >= MINUTE_MS) this.buckets.delete(key);
    }
  }
}

/**
 * Takes a token for a request to hook `name`, whose candidate targets are
 * known (the mapping is only chosen once the body is read): the strictest limit
 * among them applies. Throws 429 `hook_rate_limited` over the limit.
 */
export function takeHookRate(
  limiter: HookRateLimiter,
  name: string,
  candidates: readonly HookTarget[],
  now: number,
): void {
  let limit: HookTarget['rateLimit'];
  for (const target of candidates) {
    if (target.rateLimit && (limit === undefined || target.rateLimit.perMinute < limit.perMinute)) {
      limit = target.rateLimit;
    }
  }
  if (limit !== undefined) limiter.take(limit.bucket ?? `hook:${name}`, limit.perMinute, now);
}
