/**
 * The body of an admin API POST that takes a small JSON object (docs/operating.md): read with
 * the ingress's own limits (size and time), parsed as one JSON object; no body at all is `{}`.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseJsonObject } from '../hook-model/payload.js';
import { BODY_TIMEOUT_MS, readBody } from '../ingress/body.js';

type BodyParser = (
  request: FastifyRequest,
  payload: IncomingMessage,
  done: (error: Error | null, body?: unknown) => void,
) => void;

/** A content-type parser for one route scope: at most `limitBytes`, a JSON object. */
export function jsonObjectBody(limitBytes: number): BodyParser {
  return (request, payload, done) =>
    readBody(payload, request.headers['content-length'], limitBytes, BODY_TIMEOUT_MS, (error, body) => {
      if (error) return done(error);
      try {
        done(null, parseJsonObject(body));
      } catch (refused) {
        done(refused instanceof Error ? refused : new Error(String(refused)));
      }
    });
}

/** A `preValidation` hook: a request without a body is read as `{}`. */
export function noBodyIsEmpty(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  request.body ??= {};
  done();
}
