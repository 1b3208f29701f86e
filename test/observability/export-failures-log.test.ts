/**
 * The lines tracing writes about failed exports (docs/tracing.md, "When the collector
 * fails"), on a manual clock: the first failure at once, then at most one line a minute
 * with the count since, "works again" once after a logged failure, the count still held
 * at the stop, and the stop's flush cut at its bound. The real exporter against real
 * failing collectors: export-failures.test.ts.
 */
import { Writable } from 'node:stream';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { ExportFailures, failureReason } from '../../src/observability/export-failures.js';
import { flushWithinBound, WatchedExporter } from '../../src/observability/watched-exporter.js';

const ENDPOINT = 'http://collector:4318/v1/traces';

interface Line {
  level: number;
  msg: string;
  failures?: number;
  spans?: number;
  reason?: string;
}

function capturedLog() {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: createLogger('info', stream), lines };
}

/** What the OTLP exporter gives for a receiver's 500 answer: the status, and the body it read. */
const http500 = () =>
  Object.assign(new Error('Internal Server Error'), { code: 500, data: 'authorization=Bearer leaked-token' });
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4318'), { code: 'ECONNREFUSED' });

describe('ExportFailures', () => {
  it('logs the first failure at once, holds the next for a minute, then one line with their count', () => {
    let now = 1_000_000;
    const { log, lines } = capturedLog();
    const failures = new ExportFailures(log, ENDPOINT, () => now);
    failures.failed(http500(), 3);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, reason: 'HTTP 500 Internal Server Error', spans: 3 });
    expect(lines[0]?.msg).toContain(ENDPOINT);
    for (let i = 0; i < 500; i++) {
      now += 100;
      failures.failed(i % 2 ? refused() : http500(), 2);
    }
    // 50 s later: still the one line.
    expect(lines).toHaveLength(1);
    now = 1_000_000 + 60_000;
    failures.failed(refused(), 1);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({
      level: 40,
      failures: 501,
      spans: 1001,
      reason: 'connect ECONNREFUSED 127.0.0.1:4318',
    });
    expect(lines[1]?.msg).toMatch(/^tracing: 501 more span export\(s\) failed since the last warning/);
    // The response body the exporter keeps is never logged.
    expect(JSON.stringify(lines)).not.toContain('leaked-token');
  });

  it('says once that exports work again, with what failed since the last line; a flapping collector stays within the minute', () => {
    let now = 0;
    const { log, lines } = capturedLog();
    const failures = new ExportFailures(log, ENDPOINT, () => now);
    failures.failed(refused(), 1);
    failures.failed(refused(), 1);
    failures.succeeded();
    failures.succeeded();
    expect(lines.map((l) => [l.level, l.failures])).toEqual([
      [40, undefined],
      [30, 1],
    ]);
    expect(lines[1]?.msg).toBe(
      `tracing: exporting spans to ${ENDPOINT} works again (1 more failed since the last warning)`,
    );
    // Flapping within the same minute: no more lines, the failures are counted.
    for (let i = 0; i < 20; i++) {
      now += 1_000;
      failures.failed(refused(), 1);
      failures.succeeded();
    }
    expect(lines).toHaveLength(2);
    failures.close();
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ level: 40, failures: 20 });
    // Nothing after the stop.
    failures.failed(refused(), 1);
    failures.close();
    expect(lines).toHaveLength(3);
  });

  it('a reason is the status or the message, on one line and bounded', () => {
    expect(failureReason(new Error('Request timed out'))).toBe('Request timed out');
    expect(failureReason(Object.assign(new Error(''), { code: 404 }))).toBe('HTTP 404');
    expect(failureReason(undefined)).toBe('unknown error');
    const long = failureReason(new Error(`a\nb ${'x'.repeat(500)}`));
    expect(long.startsWith('a b x')).toBe(true);
    expect(long.length).toBeLessThanOrEqual(201);
  });
});

/** An exporter standing for one whose receiver never answers: it keeps every callback. */
class NeverAnswering implements SpanExporter {
  held: ((result: ExportResult) => void)[] = [];
  export(_spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.held.push(done);
  }
  shutdown(): Promise<void> {
    return new Promise(() => {});
  }
}

describe('flushWithinBound', () => {
  it('gives up on an exporter that does not finish, naming the spans left in flight', async () => {
    const { log, lines } = capturedLog();
    const failures = new ExportFailures(log, ENDPOINT);
    const inner = new NeverAnswering();
    const exporter = new WatchedExporter(inner, failures, 0);
    exporter.export([{} as ReadableSpan, {} as ReadableSpan], () => {});
    const started = performance.now();
    await flushWithinBound(exporter.shutdown(), exporter, failures, log, ENDPOINT, 100);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(lines.at(-1)).toMatchObject({ level: 40, spans: 2 });
    expect(lines.at(-1)?.msg).toBe(
      `tracing: 2 span(s) not exported: ${ENDPOINT} did not take them within 0.1 s of the stop`,
    );
    // The export failing later (its own timeout) writes nothing more: the stop said it.
    inner.held[0]?.({ code: 1, error: refused() });
    expect(lines).toHaveLength(1);
  });

  it('a shutdown that fails with an export failure already counted is not logged twice', async () => {
    const { log, lines } = capturedLog();
    const failures = new ExportFailures(log, ENDPOINT);
    const error = http500();
    failures.failed(error, 1);
    const exporter = new WatchedExporter(new NeverAnswering(), failures, 0);
    await flushWithinBound(Promise.reject(error), exporter, failures, log, ENDPOINT, 1_000);
    expect(lines).toHaveLength(1);
    await flushWithinBound(Promise.reject(new Error('other')), exporter, failures, log, ENDPOINT, 1_000);
    expect(lines.at(-1)?.msg).toBe('tracing: stopping the exporter failed');
  });
});
