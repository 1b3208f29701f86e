/**
 * The OTLP exporter as the gateway runs it (docs/tracing.md, "When the collector
 * fails"): every export's outcome goes to `ExportFailures`, and the flush at the
 * stop is given `STOP_FLUSH_MS`, no more. Left alone, the exporter would retry a
 * refused connection for its whole timeout (10 s by default, with back-off) and
 * wait that long on a receiver that never answers, and the stop with it.
 */
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../log.js';
import type { ExportFailures } from './export-failures.js';

/** How long the stop waits for the last spans to be exported. */
export const STOP_FLUSH_MS = 2_000;

export class WatchedExporter implements SpanExporter {
  /** Spans handed to the exporter whose export has not finished. */
  private pending = 0;

  constructor(
    private readonly inner: SpanExporter,
    private readonly failures: ExportFailures,
    /** `ExportResultCode.SUCCESS` of the loaded SDK (the enum is not imported before tracing is on). */
    private readonly success: number,
  ) {}

  get spansInFlight(): number {
    return this.pending;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.pending += spans.length;
    this.inner.export(spans, (result) => {
      this.pending -= spans.length;
      if (result.code === this.success) this.failures.succeeded();
      else this.failures.failed(result.error, spans.length);
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/**
 * Waits for `shutdown` (the provider's: it exports what is buffered, then stops
 * the exporter) at most `STOP_FLUSH_MS`. Past it, the spans still in flight are
 * given up and the line says so; the process exits without them.
 */
export async function flushWithinBound(
  shutdown: Promise<void>,
  exporter: WatchedExporter,
  failures: ExportFailures,
  log: Logger,
  endpoint: string,
  boundMs = STOP_FLUSH_MS,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const cut = new Promise<'cut'>((resolve) => {
    timer = setTimeout(() => resolve('cut'), boundMs);
  });
  const finished = shutdown.then(
    () => 'done' as const,
    (error: unknown) => {
      // An export failure is already counted (and logged, or logged just below); anything else is new.
      if (!failures.counted(error)) log.warn({ err: error }, 'tracing: stopping the exporter failed');
      return 'done' as const;
    },
  );
  const outcome = await Promise.race([finished, cut]);
  clearTimeout(timer);
  if (outcome === 'cut') {
    const spans = exporter.spansInFlight;
    log.warn(
      { endpoint, spans, boundMs },
      `tracing: ${spans > 0 ? `${spans} span(s)` : 'the last spans'} not exported: ${endpoint} ` +
        `did not take them within ${boundMs / 1000} s of the stop`,
    );
  }
  failures.close();
}
