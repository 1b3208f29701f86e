/**
 * The callback engine: sends completion callbacks from the store's outbox
 * (docs/callers.md, "Completion callbacks"). It claims due callbacks (a lease per attempt, so one replica
 * sends each), signs each attempt per Standard Webhooks — the same
 * `webhook-id` on every attempt, a fresh timestamp and signature — and records
 * the outcome: 2xx delivered; 408, 429, 5xx and network failures retried on
 * schedule.ts's timetable (Retry-After honoured); any other answer, a redirect
 * included, or a target the address guard refuses ends it as failed.
 *
 * The body is fixed at the first attempt and stored with it, so every retry
 * carries the same bytes (only the timestamp and signature change).
 */

import { hostOf } from '../http/outbound.js';
import { signedHeaders, signingKey } from '../http/webhook-signature.js';
import type { Logger } from '../log.js';
import { InFlight } from '../loops/in-flight.js';
import { ScanLoop } from '../loops/scan-loop.js';
import { stopWithGrace } from '../loops/stop-with-grace.js';
import { type SpanStarter, traced, type WorkSpan } from '../observability/work-span.js';
import type { AlertOutcome, CallbackItem, NewAlert, Store } from '../store/types.js';
import { type TimerClock as Clock, systemClock } from '../util/clock.js';
import { uuidv7 } from '../util/ids.js';
import type { SelfEndpoint } from './address-guard.js';
import { callbackBody } from './body.js';
import { givesUp, retryDelayMs } from './schedule.js';
import { type CallbackResult, type Resolver, sendCallback } from './send.js';

export type CallbackOutcome = 'delivered' | 'failed';

export interface CallbackEngineOptions {
  /** The current `hooks.callbacks.secret` (a config reload may change it). */
  secret: () => string | undefined;
  /** The gateway's own sockets, known once it listens. */
  self: () => readonly SelfEndpoint[];
  /** Called once per callback that ends (metrics: agentgate_callbacks_total). */
  onFinished?: (outcome: CallbackOutcome) => void;
  clock?: Pick<Clock, 'now' | 'setTimeout'>;
  /** Jitter source, in [0, 1). */
  random?: () => number;
  /** How often the outbox is read (due retries are found by this poll). */
  pollMs?: number;
  /** An attempt's lease: longer than its time limit, so only a dead owner's lease expires. */
  leaseMs?: number;
  /** Time limit of one attempt. */
  timeoutMs?: number;
  /** Attempts in flight at once. */
  concurrency?: number;
  owner?: string;
  /** Host name resolution (tests: a resolver that answers like a rebinding DNS server). */
  resolve?: Resolver;
  /**
   * With tracing on, each attempt is a CLIENT span continuing its run's trace, and its
   * request carries that span's `traceparent` (docs/tracing.md).
   */
  tracing?: SpanStarter;
  /** Alerts (docs/alerts.md): a callback that ends failed raises one, committed with its end. */
  alerts?: CallbackAlerts;
}

/** What the engine asks of alerts (alerts/alerts.ts). */
export interface CallbackAlerts {
  forCallback(item: CallbackItem, error: string | null): Promise<NewAlert | undefined>;
  recorded(alert: NewAlert, outcome: AlertOutcome | undefined): void;
}

/** `committed`: wakes the engine once a callback may be due (absent: its poll and `notify`). */
type EngineStore = Pick<Store, 'callbacks' | 'getRun'> & Partial<Pick<Store, 'committed'>>;

export class CallbackEngine {
  private readonly clock: Pick<Clock, 'now' | 'setTimeout'>;
  private readonly random: () => number;
  private readonly pollMs: number;
  private readonly loop: ScanLoop;
  private readonly leaseMs: number;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  readonly owner: string;
  private readonly inFlight: InFlight;

  constructor(
    private readonly store: EngineStore,
    private readonly log: Logger,
    private readonly options: CallbackEngineOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.pollMs = options.pollMs ?? 1000;
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.leaseMs = options.leaseMs ?? Math.max(60_000, this.timeoutMs * 2);
    this.concurrency = options.concurrency ?? 8;
    this.owner = options.owner ?? `cb_${uuidv7()}`;
    this.loop = new ScanLoop(() => this.scan(), this.clock, this.pollMs, {
      wakeOn: store.committed && { signal: store.committed, kinds: ['callbacks'] },
    });
    this.inFlight = new InFlight(this.clock);
  }

  start(): void {
    this.loop.start();
  }

  /** Something may be due (a run finished, a delivery settled, an attempt ended). */
  notify(): void {
    this.loop.notify();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  /** Attempts in flight (tests, diagnostics). */
  get active(): number {
    return this.inFlight.size;
  }

  /**
   * Starts nothing new and lets attempts in flight end for up to `graceMs`;
   * the rest are cut and not counted: their lease lets the next start (or,
   * on PostgreSQL, another replica once it expires) send them again.
   */
  async stop(graceMs = 5000): Promise<void> {
    await stopWithGrace(this.loop, this.inFlight, graceMs);
  }

  private async scan(): Promise<void> {
    try {
      const room = this.concurrency - this.inFlight.size;
      if (room <= 0) return;
      const due = await this.store.callbacks.claimCallbacks(this.owner, this.clock.now(), this.leaseMs, room);
      for (const item of due) {
        if (this.stopped || this.inFlight.has(item.id)) continue;
        this.launch(item);
      }
    } catch (error) {
      this.log.error({ err: error }, 'callback outbox failed; retrying on the next poll');
    }
  }

  private launch(item: CallbackItem): void {
    const task = (signal: AbortSignal) =>
      this.attempt(item, signal).catch((error: unknown) => {
        // The store failed: the lease runs out and the attempt is made again.
        this.log.error({ err: error, runId: item.runId }, 'callback attempt could not be recorded');
      });
    // Once it is no longer in flight, its slot is free for the next due callback.
    void this.inFlight.track(item.id, task).then(() => this.notify());
  }

  private async attempt(item: CallbackItem, signal: AbortSignal): Promise<void> {
    const span = () => ({
      kind: 'client' as const,
      parent: item.traceParent,
      attributes: {
        'agentgate.run_id': item.runId,
        'agentgate.callback_id': item.id,
        'agentgate.attempt': item.attempts + 1,
        ...serverOf(item.url),
      },
    });
    await traced(this.options.tracing, 'agentgate.callback', span, (attemptSpan) =>
      this.attemptIn(item, signal, attemptSpan),
    );
  }

  private async attemptIn(
    item: CallbackItem,
    signal: AbortSignal,
    span: WorkSpan | undefined,
  ): Promise<void> {
    const body = await this.bodyOf(item);
    if (body === undefined) return;
    const secret = this.options.secret();
    const key = secret === undefined ? undefined : signingKey(secret);
    if (!key?.ok) {
      await this.waitForSecret(item, body);
      return;
    }
    const now = this.clock.now();
    const result = await sendCallback({
      url: item.url,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'agentgate',
        ...signedHeaders(key.key, item.id, Math.floor(now / 1000), body),
      },
      body,
      timeoutMs: this.timeoutMs,
      self: this.options.self(),
      resolve: this.options.resolve,
      signal,
      now,
    });
    // Stopping: the attempt was cut, not answered; it is sent again after the restart.
    if (signal.aborted) return;
    const verdict = judge(result);
    if (span) traceOutcome(span, result, verdict);
    await this.settle(item, body, result, verdict);
  }

  /** The callback's body: kept from an earlier attempt, else built from the run (undefined: the run is gone, finished). */
  private async bodyOf(item: CallbackItem): Promise<string | undefined> {
    if (item.body !== null) return item.body;
    const run = await this.store.getRun(item.runId);
    if (run) return callbackBody(run);
    await this.finish(item, item.attempts, '{}', 'failed', 'the run no longer exists');
    return undefined;
  }

  /** Not the receiver's failure: waits for the operator to set the secret, without counting an attempt. */
  private async waitForSecret(item: CallbackItem, body: string): Promise<void> {
    const reason = 'hooks.callbacks.secret is missing or invalid';
    this.log.error({ runId: item.runId }, `callback not sent: ${reason}`);
    await this.store.callbacks.retryCallback(item, this.owner, {
      attempts: item.attempts,
      body,
      error: reason,
      now: this.clock.now(),
      nextAttemptAt: this.clock.now() + retryDelayMs(4, undefined, this.random),
    });
  }

  /** Records what the attempt's answer means: the callback's end, or its next try. */
  private async settle(
    item: CallbackItem,
    body: string,
    result: Awaited<ReturnType<typeof sendCallback>>,
    verdict: ReturnType<typeof judge>,
  ): Promise<void> {
    const attempts = item.attempts + 1;
    const at = this.clock.now();
    if (result.kind === 'refused') {
      // No HTTP attempt was made: `attempts` counts only those.
      const reason = verdict.kind === 'permanent' ? verdict.reason : null;
      await this.finish(item, item.attempts, body, 'failed', reason);
    } else if (verdict.kind === 'delivered') {
      await this.finish(item, attempts, body, 'delivered', null);
    } else if (verdict.kind === 'permanent') {
      await this.finish(item, attempts, body, 'failed', verdict.reason);
    } else if (givesUp(attempts, item.armedAt, at)) {
      const reason = `${verdict.reason} (gave up after ${attempts} attempts)`;
      await this.finish(item, attempts, body, 'failed', reason);
    } else {
      await this.retry(item, body, attempts, verdict.reason, verdict.retryAfterMs, at);
    }
  }

  private async retry(
    item: CallbackItem,
    body: string,
    attempts: number,
    reason: string,
    retryAfterMs: number | undefined,
    at: number,
  ): Promise<void> {
    const nextAttemptAt = at + retryDelayMs(attempts, retryAfterMs, this.random);
    const kept = await this.store.callbacks.retryCallback(item, this.owner, {
      attempts,
      body,
      error: reason,
      now: at,
      nextAttemptAt,
    });
    if (!kept) return;
    this.loop.wakeBy(nextAttemptAt);
    const fields = {
      runId: item.runId,
      host: hostOf(item.url),
      attempts,
      reason,
      retryInMs: nextAttemptAt - at,
    };
    this.log.info(fields, 'callback attempt failed; retrying');
  }

  private async finish(
    item: CallbackItem,
    attempts: number,
    body: string,
    status: CallbackOutcome,
    error: string | null,
  ): Promise<void> {
    const alert = status === 'failed' ? await this.options.alerts?.forCallback(item, error) : undefined;
    const recorded = await this.store.callbacks.finishCallback(item, this.owner, {
      attempts,
      body,
      error,
      now: this.clock.now(),
      status,
      ...(alert ? { alert } : {}),
    });
    if (!recorded) return;
    if (alert) this.options.alerts?.recorded(alert, typeof recorded === 'string' ? recorded : undefined);
    this.options.onFinished?.(status);
    const fields = { runId: item.runId, host: hostOf(item.url), attempts };
    if (status === 'delivered') this.log.info(fields, 'callback delivered');
    else this.log.warn({ ...fields, reason: error }, 'callback failed');
  }
}

/** `server.address` and `server.port` of a callback URL (OpenTelemetry's HTTP client conventions). */
function serverOf(url: string): Record<string, string | number> {
  try {
    const { hostname, port, protocol } = new URL(url);
    return {
      'server.address': hostname.replace(/^\[|\]$/g, ''),
      'server.port': port === '' ? (protocol === 'https:' ? 443 : 80) : Number(port),
    };
  } catch {
    return {};
  }
}

/** The attempt's answer on its span: the status code, and an error unless it was delivered. */
function traceOutcome(span: WorkSpan, result: CallbackResult, verdict: Verdict): void {
  if (result.kind === 'answer') span.setAttributes({ 'http.response.status_code': result.status });
  if (verdict.kind !== 'delivered') span.fail(verdict.reason, verdict.kind);
}

type Verdict =
  | { kind: 'delivered' }
  | { kind: 'permanent'; reason: string }
  | { kind: 'temporary'; reason: string; retryAfterMs?: number };

/**
 * 2xx ends it; 408, 429, 5xx and network errors are retried; any other answer ends it as failed
 * (docs/callers.md, "Retries").
 */
export function judge(result: CallbackResult): Verdict {
  if (result.kind === 'refused') return { kind: 'permanent', reason: `refused: ${result.reason}` };
  if (result.kind === 'network') return { kind: 'temporary', reason: result.reason };
  const { status } = result;
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  if (status === 408 || status === 429 || status >= 500) {
    return { kind: 'temporary', reason: `HTTP ${status}`, retryAfterMs: result.retryAfterMs };
  }
  if (status >= 300 && status < 400) {
    return { kind: 'permanent', reason: `HTTP ${status}: redirects are not followed` };
  }
  return { kind: 'permanent', reason: `HTTP ${status}` };
}
