import { timingSafeEqual } from 'node:crypto';
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

/**
 * A matcher for one expected token, compared in constant time: the time taken
 * depends on the tokens' lengths, never on their contents (as Go's
 * `subtle.ConstantTimeCompare`). Only whether the length matches is revealed,
 * and generated tokens all have the same, public length.
 */
export function tokenMatcher(expected: string): (presented: string | undefined) => boolean {
  const expectedBytes = Buffer.from(expected, 'utf8');
  return (presented) => {
    if (presented === undefined) return false;
    const presentedBytes = Buffer.from(presented, 'utf8');
    return presentedBytes.length === expectedBytes.length && timingSafeEqual(presentedBytes, expectedBytes);
  };
}
