/**
 * The span the current piece of work runs in (docs/tracing.md, "Outbound
 * requests and logs"): every outbound request made inside it carries its W3C
 * `traceparent`, and every log line written inside it carries its `trace_id`
 * and `span_id`.
 *
 * An AsyncLocalStorage of our own rather than OpenTelemetry's global context
 * manager: each gateway has its own tracer provider (several run in one test
 * process), and what is stored here is only the span's identity, not the SDK
 * objects. Nothing is ever stored with tracing off, so `activeTrace()` answers
 * undefined at once and Node never turns its async context tracking on.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ActiveTrace {
  /** The span's own `traceparent`: what a request made inside it sends. */
  readonly traceparent: string;
  /** The W3C `tracestate` to send with it, when the trace has one. */
  readonly tracestate?: string;
  readonly traceId: string;
  readonly spanId: string;
}

const storage = new AsyncLocalStorage<ActiveTrace>();

/** Runs `work` with `trace` as the active span (and everything it starts, asynchronously too). */
export function runInTrace<T>(trace: ActiveTrace, work: () => T): T {
  return storage.run(trace, work);
}

/** The active span's identity, or undefined outside any traced work. */
export function activeTrace(): ActiveTrace | undefined {
  return storage.getStore();
}

/** What a log line inside traced work carries (the names OpenTelemetry's log correlation uses). */
export function traceLogFields(): { trace_id: string; span_id: string } | Record<string, never> {
  const trace = storage.getStore();
  return trace === undefined ? {} : { trace_id: trace.traceId, span_id: trace.spanId };
}
