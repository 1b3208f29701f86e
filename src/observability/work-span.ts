/**
 * Spans of the work behind a hook request (docs/tracing.md, "What is
 * traced"): the run, its model calls, each delivery and callback attempt, a
 * heartbeat. Each continues a trace from a stored W3C `traceparent` — the one
 * the hook request's span committed with the run, or the one the run's span
 * left on its delivery and callback — so the work joins the caller's trace
 * wherever and whenever it executes: after a restart, on another replica.
 *
 * Built by tracing.ts once the SDK is loaded; nothing here loads it.
 */
import type * as Api from '@opentelemetry/api';
import type { Attributes, Link, Span, SpanContext, Tracer } from '@opentelemetry/api';
import { type ActiveTrace, runInTrace } from './active-trace.js';

export type WorkSpanKind = 'internal' | 'client' | 'consumer';

export interface WorkSpanOptions {
  kind: WorkSpanKind;
  /**
   * The stored `traceparent` to continue; absent, null or malformed starts a new
   * trace (a retried run, an event accepted with tracing off).
   */
  parent?: string | null;
  /** Traces this span is linked to, as stored `traceparent`s (a heartbeat's events); null ones are skipped. */
  links?: readonly (string | null | undefined)[];
  attributes?: Attributes;
}

/** A span around a piece of work, and the scope in which that work's requests and logs carry it. */
export interface WorkSpan {
  /** Its own `traceparent`: stored with what continues the work later (a delivery, a callback). */
  readonly traceparent: string;
  readonly traceId: string;
  setAttributes(attributes: Attributes): void;
  /** Marks it failed: status ERROR with the message, and `error.type` (a class of error, low cardinality). */
  fail(message: string, errorType: string): void;
  end(): void;
  /** A child span, started now. */
  child(name: string, options: Omit<WorkSpanOptions, 'parent' | 'links'>): WorkSpan;
  /** Runs `work` with this span active: its outbound requests and log lines carry it (active-trace.ts). */
  activate<T>(work: () => T): T;
}

export interface Propagation {
  extract(traceparent: string): Api.Context;
}

/** Makes `startWorkSpan` over a loaded API module, tracer and W3C propagator. */
export function workSpans(api: typeof Api, tracer: Tracer, propagation: Propagation) {
  const kinds: Record<WorkSpanKind, Api.SpanKind> = {
    internal: api.SpanKind.INTERNAL,
    client: api.SpanKind.CLIENT,
    consumer: api.SpanKind.CONSUMER,
  };

  const wrap = (span: Span): WorkSpan => {
    const context = span.spanContext();
    const identity: ActiveTrace = {
      traceparent: traceparentOf(context),
      ...(context.traceState ? { tracestate: context.traceState.serialize() } : {}),
      traceId: context.traceId,
      spanId: context.spanId,
    };
    return {
      traceparent: identity.traceparent,
      traceId: identity.traceId,
      setAttributes: (attributes) => span.setAttributes(attributes),
      fail: (message, errorType) => {
        span.setAttribute('error.type', errorType);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message });
      },
      end: () => span.end(),
      child: (name, options) =>
        wrap(
          tracer.startSpan(
            name,
            { kind: kinds[options.kind], attributes: options.attributes },
            api.trace.setSpan(api.ROOT_CONTEXT, span),
          ),
        ),
      activate: (work) => runInTrace(identity, work),
    };
  };

  const linkOf = (traceparent: string | null | undefined): Link[] => {
    if (!traceparent) return [];
    const context = api.trace.getSpanContext(propagation.extract(traceparent));
    return context && api.isSpanContextValid(context) ? [{ context }] : [];
  };

  return function startWorkSpan(name: string, options: WorkSpanOptions): WorkSpan {
    const parent = options.parent ? propagation.extract(options.parent) : api.ROOT_CONTEXT;
    const links = (options.links ?? []).flatMap(linkOf);
    return wrap(
      tracer.startSpan(
        name,
        { kind: kinds[options.kind], attributes: options.attributes, ...(links.length ? { links } : {}) },
        parent,
      ),
    );
  };
}

/**
 * A span's own W3C `traceparent` (version 00): what is stored with a run or
 * event so the worker can continue the trace.
 */
export function traceparentOf(context: SpanContext): string {
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}

/** What starts work spans: the gateway's Tracing when tracing is on. */
export interface SpanStarter {
  startSpan(name: string, options: WorkSpanOptions): WorkSpan;
}

/**
 * Runs `work` inside a new span, ended when the work settles; with no tracer
 * (tracing off) just runs it, building nothing: `options` is only called when
 * a span is made.
 */
export async function traced<T>(
  tracing: SpanStarter | undefined,
  name: string,
  options: () => WorkSpanOptions,
  work: (span: WorkSpan | undefined) => Promise<T>,
): Promise<T> {
  if (!tracing) return work(undefined);
  const span = tracing.startSpan(name, options());
  try {
    return await span.activate(() => work(span));
  } finally {
    span.end();
  }
}
