/**
 * The authentication steps the hook ingress and the admin API share: the
 * query-token refusal, the client address, and the lockout around a token
 * check — assembled once by `tokenGuard`, which both use (the hooks with the
 * hook token, the admin API with the gateway token). The Gmail push endpoint
 * uses the lockout steps on their own (its token is in the query by design).
 */
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { AuthLimiter } from './auth-limiter.js';
import { queryHasToken } from './query-token.js';
import type { CredentialReader, TokenMatcher } from './token.js';

export interface TokenGuardOptions {
  limiter: AuthLimiter;
  log?: Logger;
  /** Reads the presented token; throws 400 `ambiguous_credentials` (not an auth failure). */
  credential: CredentialReader;
  /**
   * The matcher for the expected token, asked on every request (a config
   * reload swaps the hook token); undefined when no token is set, which
   * refuses every request with 401 `disabled` without counting a failure.
   */
  matcher: () => TokenMatcher | undefined;
  /** The 401 message for a missing or wrong token. */
  unauthorized: string;
  /** The 401 message while `matcher` gives no token. */
  disabled?: string;
  /** The one method taken; any other is refused 405 right after the query-token check. */
  method?: string;
}

/**
 * A token check in CONTRACT §4's order: token in the query → method → lockout
 * → credential (ambiguity) → token. Returns the client address once the token
 * matched; counting the success is the caller's, since a hook whose sender
 * signature is still to be checked is not authenticated yet.
 */
export function tokenGuard(options: TokenGuardOptions): (request: FastifyRequest) => string {
  const { limiter, log, credential, matcher, method } = options;
  const disabled = options.disabled ?? options.unauthorized;
  return (request) => {
    rejectQueryToken(request);
    if (method !== undefined && request.method !== method) {
      throw new HttpError(405, 'method_not_allowed', `${request.method} is not allowed; use ${method}`, {
        allow: method,
      });
    }
    const address = clientAddress(request);
    refuseIfLockedOut(limiter, address);
    const matches = matcher();
    if (matches === undefined) throw new HttpError(401, 'unauthorized', disabled);
    if (!matches(credential(request.raw.rawHeaders))) {
      recordAuthFailure(limiter, address, log);
      throw new HttpError(401, 'unauthorized', options.unauthorized);
    }
    return address;
  };
}

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
