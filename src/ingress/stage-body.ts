/**
 * The body stage: the hook routes parse every body themselves, whatever its Content-Type
 * (docs/endpoints.md), read with the limit and deadline of docs/errors.md (413, 408).
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HookTarget } from '../hook-model/targets.js';
import { readBody } from './body.js';
import { type HookDoor, hookStateOf } from './hook-request.js';

/**
 * Reads a hook request's body. The mapping is only known once the payload is parsed
 * (stage-target.ts): it is read up to the largest limit of the hook's candidates.
 */
export function readHookBody(
  door: HookDoor,
  request: FastifyRequest,
  payload: IncomingMessage,
  done: (error: Error | null, body?: Buffer) => void,
): void {
  const limit = largestBodyLimit(hookStateOf(request).candidates);
  readBody(payload, request.headers['content-length'], limit, door.bodyTimeoutMs, done);
}

function largestBodyLimit(candidates: readonly HookTarget[]): number {
  let limit = 0;
  for (const target of candidates) if (target.maxBodyBytes > limit) limit = target.maxBodyBytes;
  return limit;
}

/**
 * Fastify answers a Content-Type it cannot parse (`a/b c`, `;;;`, empty) with 415
 * before any parser runs. The body is JSON whatever the header says, so a malformed
 * header counts as absent, for the mapping's transform too. `mediaType` is the parse
 * Fastify does anyway and caches for the request.
 */
export function malformedContentTypeIsAbsent(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: () => void,
): void {
  if (request.mediaType === undefined && request.headers['content-type'] !== undefined) {
    request.headers = { 'content-type': undefined };
  }
  done();
}
