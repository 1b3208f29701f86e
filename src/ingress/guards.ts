/**
 * The authentication steps the hook ingress and the admin API share: the
 * query-token refusal, the client address, and the lockout around a token check.
 */
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { AuthLimiter } from './auth-limiter.js';
import { queryHasToken } from './query-token.js';

/** A token in the query string ends up in access logs and browser history: refuse it outright. */
export function rejectQueryToken(request: FastifyRequest): void {
  if (queryHasToken(request.url)) {
    throw new HttpError(400, 'token_in_query', 'send the token in a header, not in the query string');
  }
}

/**
 * The client address used for the auth-failure lockout: the socket peer, or the
 * first untrusted X-Forwarded-For hop when the peer is a trusted proxy (Fastify's
 * `trustProxy` does that walk). IPv4-mapped IPv6 is folded to plain IPv4 here for
 * logs; the limiter itself counts by `addressKey` (IPv6 by /64).
 */
export function clientAddress(request: FastifyRequest): string {
  const ip = request.ip ?? request.socket.remoteAddress ?? 'unknown';
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}

/** Throws 429 with Retry-After while `address` is locked out. */
export function refuseIfLockedOut(limiter: AuthLimiter, address: string): void {
  const lock = limiter.check(address);
  if (lock.locked) {
    throw new HttpError(429, 'rate_limited', 'too many failed authentication attempts; retry later', {
      'retry-after': String(lock.retryAfterSeconds),
    });
  }
}

/** Counts an authentication failure and logs what is worth an operator's attention. */
export function recordAuthFailure(limiter: AuthLimiter, address: string, log?: Logger): void {
  const outcome = limiter.fail(address);
  if (outcome === 'locked') log?.warn({ client: address }, 'auth failures: client address locked out');
  else if (outcome === 'overflow') {
    log?.warn(
      { client: address },
      'auth failures: the table of locked-out addresses is full; further addresses that reach the limit are refused 401 but not locked until locks expire',
    );
  }
}
