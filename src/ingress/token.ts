import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const TOKEN_HEADER = 'x-agentgate-token';

/** The token a request presents: `Authorization: Bearer …`, else the `x-agentgate-token` header. */
export function presentedToken(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (match) return match[1];
  }
  const header = headers[TOKEN_HEADER];
  return typeof header === 'string' && header.length > 0 ? header : undefined;
}

const digest = (value: string) => hash('sha256', value, 'buffer') as unknown as Buffer;

/**
 * Constant-time comparison that does not leak the expected token's length:
 * both sides are hashed to fixed-size digests before `timingSafeEqual`.
 */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(digest(presented), digest(expected));
}

/** A matcher with the expected digest computed once, for the request hot path. */
export function tokenMatcher(expected: string): (presented: string | undefined) => boolean {
  const expectedDigest = digest(expected);
  return (presented) => presented !== undefined && timingSafeEqual(digest(presented), expectedDigest);
}
