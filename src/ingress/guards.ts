import type { FastifyRequest } from 'fastify';
import { HttpError } from '../http/errors.js';

/** A token in the query string ends up in access logs and browser history: refuse it outright. */
export function rejectQueryToken(request: FastifyRequest): void {
  const query = request.query as Record<string, unknown> | undefined;
  if (query && Object.hasOwn(query, 'token')) {
    throw new HttpError(400, 'token_in_query', 'send the token in a header, not in the query string');
  }
}

/**
 * The client address used for the auth-failure lockout: the socket peer, or the
 * first untrusted X-Forwarded-For hop when the peer is a trusted proxy (Fastify's
 * `trustProxy` does that walk). IPv4-mapped IPv6 is folded to plain IPv4.
 */
export function clientAddress(request: FastifyRequest): string {
  const ip = request.ip ?? request.socket.remoteAddress ?? 'unknown';
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}
