/**
 * The SERVER span of a request to a hook route (docs/tracing.md, "What is
 * traced"): started first thing in onRequest, before the token check, as a
 * child of the caller's W3C `traceparent` when it sent one, and ended when its
 * answer is out — whatever answered it (a rejection, a 5xx, a connection's
 * closing answer, a client that left).
 *
 * Only a gateway with tracing on registers these hooks and the request
 * property: with tracing off a hook request does no tracing work at all.
 */
import type { Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAbortHookHandler } from 'fastify';
import type { Tracing } from './tracing.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's SERVER span until it ends; decorated (null) only where tracing is on. */
    traceSpan: Span | null;
  }
}

type Done = () => void;

export interface RequestSpanHooks<R extends FastifyRequest> {
  onRequest: (request: R, reply: FastifyReply, done: Done) => void;
  onResponse: (request: R, reply: FastifyReply, done: Done) => void;
  onError: (request: R, reply: FastifyReply, error: Error, done: Done) => void;
  onRequestAbort: onRequestAbortHookHandler;
}

/**
 * Decorates `scope`'s requests with `traceSpan` and answers the hooks that
 * open and close it. `route` is the request's low-cardinality route template
 * (`/hooks/{name}`; `http.route`), and the span is named `{method} {route}`;
 * `finish` adds what is known once the request is answered (the hook it reached).
 */
export function requestSpanHooks<R extends FastifyRequest>(
  scope: FastifyInstance,
  tracing: Tracing,
  route: (request: R) => string,
  finish?: (request: R, span: Span) => void,
): RequestSpanHooks<R> {
  scope.decorateRequest('traceSpan', null);
  const end = (request: R, statusCode: number | undefined): void => {
    const span = request.traceSpan;
    if (span === null) return;
    request.traceSpan = null;
    finish?.(request, span);
    if (statusCode === undefined) span.end();
    else tracing.endServerSpan(span, statusCode);
  };
  return {
    onRequest: (request, _reply, done) => {
      const template = route(request);
      request.traceSpan = tracing.startServerSpan(`${request.method} ${template}`, request.headers, {
        'http.request.method': request.method,
        'http.route': template,
      });
      done();
    },
    onResponse: (request, reply, done) => {
      end(request, reply.statusCode);
      done();
    },
    // A connection's last answer (413, 408) is written past Fastify (http/closing-answer.ts):
    // onResponse never sees it, so its span ends when its error is raised. Told by its shape
    // (an HttpError that closes the connection) so that this layer imports nothing of http/.
    onError: (request, _reply, error, done) => {
      const closing = error as Error & { statusCode?: unknown; headers?: Record<string, unknown> };
      if (closing.headers?.connection === 'close' && typeof closing.statusCode === 'number')
        end(request, closing.statusCode);
      done();
    },
    // The client left before its answer: the span ends without one.
    onRequestAbort: (request, done) => {
      end(request as R, undefined);
      done();
    },
  };
}
