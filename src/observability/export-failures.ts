/**
 * What the gateway says when the OTLP receiver does not take its spans
 * (docs/tracing.md, "When the collector fails"). The first failure is logged at
 * once; later ones are counted and logged at most once a minute, as one line
 * with the count and the latest reason, so a collector that is down for a day
 * writes about 1,440 lines, not one per batch. The first export that works
 * after a logged failure says so; the stop logs what is still counted.
 *
 * Only the reason is logged (the HTTP status, or the network error's message),
 * never the exporter's error object: it holds the receiver's answer body, and a
 * log line about the exporter must never come near its headers
 * (`OTEL_EXPORTER_OTLP_HEADERS` often carries a token).
 */
import type { Logger } from '../log.js';

/** At most one failure line per this long. */
export const FAILURE_LINE_EVERY_MS = 60_000;

/** A reason longer than this is cut: it is for a person reading a log. */
const REASON_MAX_CHARS = 200;

interface Held {
  exports: number;
  spans: number;
  latest: string;
}

export class ExportFailures {
  private lastLineAt: number | undefined;
  /** A failure line was written and no "works again" line since. */
  private failing = false;
  private held: Held = { exports: 0, spans: 0, latest: '' };
  private closed = false;
  /** The errors counted here, so the stop does not log the same failure a second time. */
  private readonly seen = new WeakSet<object>();

  constructor(
    private readonly log: Logger,
    /** The printable endpoint (no user info or query). */
    private readonly endpoint: string,
    private readonly now: () => number = Date.now,
    private readonly everyMs = FAILURE_LINE_EVERY_MS,
  ) {}

  /** An export of `spans` spans failed with `error` (the SDK drops those spans). */
  failed(error: unknown, spans: number): void {
    if (typeof error === 'object' && error !== null) this.seen.add(error);
    if (this.closed) return;
    const reason = failureReason(error);
    const now = this.now();
    if (this.lastLineAt === undefined) {
      this.lastLineAt = now;
      this.failing = true;
      this.log.warn(
        { endpoint: this.endpoint, reason, spans },
        `tracing: exporting ${spans} span(s) to ${this.endpoint} failed (${reason}); they are dropped. ` +
          'Further failures are counted and logged at most once a minute',
      );
      return;
    }
    this.held = { exports: this.held.exports + 1, spans: this.held.spans + spans, latest: reason };
    if (now - this.lastLineAt >= this.everyMs) {
      this.lastLineAt = now;
      this.failing = true;
      this.logHeld();
    }
  }

  /** An export worked: after a logged failure, says so once (at info). */
  succeeded(): void {
    if (this.closed || !this.failing) return;
    this.failing = false;
    const since = this.held.exports === 0 ? '' : ` (${this.held.exports} more failed since the last warning)`;
    this.log.info(
      { endpoint: this.endpoint, failures: this.held.exports },
      `tracing: exporting spans to ${this.endpoint} works again${since}`,
    );
    this.held = { exports: 0, spans: 0, latest: '' };
  }

  /** Whether `error` is one of the export failures counted here. */
  counted(error: unknown): boolean {
    return typeof error === 'object' && error !== null && this.seen.has(error);
  }

  /** The stop: logs the failures still counted; nothing is logged after it. */
  close(): void {
    if (this.closed) return;
    if (this.held.exports > 0) this.logHeld();
    this.closed = true;
  }

  private logHeld(): void {
    const { exports, spans, latest } = this.held;
    this.log.warn(
      { endpoint: this.endpoint, failures: exports, spans, reason: latest },
      `tracing: ${exports} more span export(s) failed since the last warning ` +
        `(${spans} span(s) dropped; the latest: ${latest}; exporting to ${this.endpoint})`,
    );
    this.held = { exports: 0, spans: 0, latest: '' };
  }
}

/**
 * A failed export's reason: `HTTP <status> <status text>` for a receiver's error
 * answer (the exporter's error carries the status as a number), else the error's
 * message (`connect ECONNREFUSED 127.0.0.1:4318`, `Request timed out`).
 */
export function failureReason(error: unknown): string {
  if (typeof error !== 'object' || error === null) return 'unknown error';
  const { message, code } = error as { message?: unknown; code?: unknown };
  const text = typeof message === 'string' ? message.replace(/\s+/g, ' ').trim() : '';
  const reason = typeof code === 'number' ? `HTTP ${code}${text ? ` ${text}` : ''}` : text || 'unknown error';
  return reason.length > REASON_MAX_CHARS ? `${reason.slice(0, REASON_MAX_CHARS)}…` : reason;
}
