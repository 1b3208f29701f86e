/**
 * What watches every hook answer, rejections included: the metrics' count and time
 * (docs/operating.md, "Metrics") and, with tracing on, the request's SERVER span
 * (docs/tracing.md). Built once when the routes are registered.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { HttpError } from '../http/errors.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { type RequestSpanHooks, requestSpanHooks } from '../observability/request-spans.js';
import type { HookIngress } from './hook-ingress.js';
import type { DoorRequest, HookDoor } from './hook-request.js';

/** The metrics' `hook` label of a path that names no hook. */
const UNKNOWN_HOOK = 'unknown';

/**
 * The hook the path names — its chosen target, else its first candidate — or `unknown`
 * (the `hook` label; docs/operating.md, "Metrics").
 */
function hookLabel(ingress: HookIngress, request: DoorRequest): string {
  const state = request.hookState;
  const target = state
    ? (state.target ?? state.candidates[0])
    : ingress.state.router.candidates(request.params['*'] ?? '')[0];
  return target?.name ?? UNKNOWN_HOOK;
}

/** The `token` label: the matched hook token's id, or `none` (docs/operating.md, "Metrics"). */
const tokenLabel = (request: DoorRequest): string => request.hookState?.token.id ?? 'none';

export interface AnswerCounters {
  onResponse: (request: DoorRequest, reply: FastifyReply, done: () => void) => void;
  onError: (request: DoorRequest, reply: FastifyReply, error: Error, done: () => void) => void;
}

/** Counts every answer; the time is Fastify's own hrtime span of the reply. */
export function answerCounters(metrics: GatewayMetrics, ingress: HookIngress): AnswerCounters {
  return {
    onResponse: (request, reply, done) => {
      metrics.hookAnswered(
        hookLabel(ingress, request),
        reply.statusCode,
        reply.elapsedTime / 1000,
        tokenLabel(request),
      );
      done();
    },
    // A connection's last answer (413, 408) is written past Fastify (closing-answer.ts), so
    // onResponse never sees it: it is counted when its error is raised.
    onError: (request, reply, error, done) => {
      if (error instanceof HttpError && error.headers.connection === 'close') {
        metrics.hookAnswered(
          hookLabel(ingress, request),
          error.statusCode,
          reply.elapsedTime / 1000,
          tokenLabel(request),
        );
      }
      done();
    },
  };
}

/**
 * The hook requests' spans, named by the route template (`/hooks/{name}`), with the hook
 * they reached once answered; undefined with tracing off.
 */
export function hookSpans(scope: FastifyInstance, door: HookDoor): RequestSpanHooks<DoorRequest> | undefined {
  const { tracing, hooksPath, ingress } = door;
  if (!tracing) return undefined;
  return requestSpanHooks<DoorRequest>(
    scope,
    tracing,
    (request) => (request.params['*'] === undefined ? hooksPath : `${hooksPath}/{name}`),
    (request, span) => span.setAttribute('agentgate.hook', hookLabel(ingress, request)),
  );
}
