/**
 * The longest path segment the gateway takes (docs/errors.md): 4,608 characters as sent,
 * the room a 512-character session key needs with every character percent-encoded at 9
 * bytes. A longer segment is `414 uri_too_long` wherever it is — a route's parameter (the
 * router's own limit), an unknown path, or a hook path's name (a wildcard, which the router
 * does not limit) — before any token or name is looked at. The answer never repeats it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';

/** Longest path segment (and route parameter) taken, as sent (percent-encoded). */
export const MAX_PARAM_LENGTH = 4_608;

export const uriTooLong = () =>
  new HttpError('uri_too_long', `a path segment exceeds ${MAX_PARAM_LENGTH} characters`);

const SLASH = 0x2f;
const QUERY = 0x3f;

/** Whether a segment of `url`'s path (before any query) is longer than `MAX_PARAM_LENGTH`. */
export function hasOverlongSegment(url: string): boolean {
  // A URL this short has no such segment: one comparison on the hot path of every hook.
  if (url.length <= MAX_PARAM_LENGTH) return false;
  let segmentStart = 0;
  for (let i = 0; i < url.length; i++) {
    const code = url.charCodeAt(i);
    if (code === QUERY) break;
    if (code === SLASH) segmentStart = i + 1;
    else if (i - segmentStart >= MAX_PARAM_LENGTH) return true;
  }
  return false;
}

/** An `onRequest` hook refusing an over-long segment first (the hook routes' wildcard). */
export function refuseOverlongSegment(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (error?: Error) => void,
) {
  done(hasOverlongSegment(request.url) ? uriTooLong() : undefined);
}
