/**
 * The authentication steps the hook ingress and the admin API share: the
 * query-token refusal, the client address, and the lockout around a token
 * check — assembled once by `tokenGuard`, which both use (the hooks with the
 * hook token, the admin API with the gateway token). The Gmail push endpoint
 * uses the lockout steps on their own (its token is in the query by design).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { AuthLimiter } from './auth-limiter.js';
import { queryHasToken } from './query-token.js';
import type { CredentialReader } from './token.js';

/** Who a presented token is, if it is a valid one: the identity the guard hands on (e.g. a hook token). */
export type IdentityMatcher<I> = (presented: string | undefined) => I | undefined;

export interface TokenGuardOptions<I> {
  limiter: AuthLimiter;
  log?: Logger;
  /** Reads the presented token; throws 400 `ambiguous_credentials` (not an auth failure). */
  credential: CredentialReader;
  /**
   * The matcher for the expected tokens, asked on every request (a config
   * reload swaps the hook tokens); undefined when no token is set, which
   * refuses every request with 401 `disabled` without counting a failure.
   */
  matcher: () => IdentityMatcher<I> | undefined;
  /** The 401 message for a missing or wrong token. */
  unauthorized: string;
  /** The 401 message while `matcher` gives no token. */
  disabled?: string;
  /** The one method taken; any other is refused 405 right after the query-token check. */
  method?: string;
  /**
   * Who a request is that needs no token, asked after the lockout: a hook its sender's
   * signature opens (docs/senders.md, "Signatures as the credential"), checked later, with
   * the body. Undefined: the token is needed.
   */
  withoutToken?: (request: FastifyRequest) => I | undefined;
}

/**
 * What a token guard gives: the client address and who the token is,
 * synchronously, once the token matched (a good request never waits on
 * anything); or, for a missing or wrong token, a promise that rejects with the
 * 401 — or the 429 if the address got locked meanwhile — once the failure is
 * counted (across replicas, a database round trip: docs/postgres.md).
 */
export type GuardResult<I> = Authenticated<I> | Promise<never>;

export interface Authenticated<I> {
  address: string;
  identity: I;
}

/**
 * A token check in the documented order (docs/authentication.md): token in the
 * query → method → lockout → credential (ambiguity) → token; a request `withoutToken`
 * names stops after the lockout. Refusals other
 * than a failed token are thrown synchronously. Counting the success is the
 * caller's, since a hook whose sender signature is still to be checked is not
 * authenticated yet.
 */
export function tokenGuard<I>(options: TokenGuardOptions<I>): (request: FastifyRequest) => GuardResult<I> {
  const { limiter, log, credential, matcher, method } = options;
  const disabled = options.disabled ?? options.unauthorized;
  return (request) => {
    rejectQueryToken(request);
    if (method !== undefined && request.method !== method) {
      throw new HttpError('method_not_allowed', `${request.method} is not allowed; use ${method}`, {
        allow: method,
      });
    }
    const address = clientAddress(request);
    refuseIfLockedOut(limiter, address);
    const signed = options.withoutToken?.(request);
    if (signed !== undefined) return { address, identity: signed };
    const matches = matcher();
    if (matches === undefined) throw new HttpError('unauthorized', disabled);
    const identity = matches(credential(request.raw.rawHeaders));
    if (identity === undefined) {
      return refuseAuthFailure(limiter, address, new HttpError('unauthorized', options.unauthorized), log);
    }
    return { address, identity };
  };
}

/**
 * Runs a token guard as a callback-style Fastify hook: `then` runs on the
 * success path in the same tick (no promise for a good request); a failed token
 * is answered once its failure is counted.
 */
export function guardHook<R extends FastifyRequest, I>(
  guard: (request: R) => GuardResult<I>,
  then: (request: R, address: string, identity: I) => void,
): (request: R, reply: FastifyReply, done: (error?: Error) => void) => void {
  return (request, _reply, done) => {
    const result = guard(request);
    if (result instanceof Promise) {
      result.catch(done);
      return;
    }
    then(request, result.address, result.identity);
    done();
  };
}

/** A token in the query string ends up in access logs and browser history: refuse it outright. */
export function rejectQueryToken(request: FastifyRequest): void {
  if (queryHasToken(request.url)) {
    throw new HttpError('token_in_query', 'send the token in a header, not in the query string');
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
  if (lock.locked) throw rateLimited(lock.retryAfterSeconds);
}

/**
 * Counts an authentication failure, logs what is worth an operator's attention,
 * and rejects with `unauthorized` (the 401) — or with 429 when the address was
 * already locked by the time the failure was counted (another replica's, or an
 * asynchronous check's, failure reached the limit first): failures 1–20 are
 * 401 and every later attempt 429, however the guesses are spread.
 */
export async function refuseAuthFailure(
  limiter: AuthLimiter,
  address: string,
  unauthorized: Error,
  log?: Logger,
): Promise<never> {
  const outcome = await limiter.fail(address);
  if (outcome === 'refused') {
    const lock = limiter.check(address);
    // Not locked here only if this replica's table of locks is full: still refused.
    throw rateLimited(lock.locked ? lock.retryAfterSeconds : 1);
  }
  if (outcome === 'locked') log?.warn({ client: address }, 'auth failures: client address locked out');
  else if (outcome === 'overflow') {
    log?.warn(
      { client: address },
      'auth failures: the table of locked-out addresses is full; further addresses that reach the limit are refused 401 but not locked until locks expire',
    );
  }
  throw unauthorized;
}

function rateLimited(retryAfterSeconds: number): HttpError {
  return new HttpError('rate_limited', 'too many failed authentication attempts; retry later', {
    'retry-after': String(retryAfterSeconds),
  });
}
