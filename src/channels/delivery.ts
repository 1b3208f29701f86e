/**
 * The delivery engine: works through the outbox (docs/agent-runs.md). For each reply it fixes the route once — `last` is the main
 * session's last route, else the first configured channel; `to` defaults to the
 * route's recipient — renders the Markdown reply in the platform's formatting,
 * split at its limit (the adapter's render, format/), and sends the
 * parts in order, recording each. Transient failures are retried with
 * exponential backoff and jitter, honouring the platform's Retry-After; a
 * permanent failure (bad token, unknown chat) ends the delivery at once with
 * the platform's reason. A restart resumes after the last part sent.
 *
 * Deliveries run concurrently, so one slow or failing platform holds up nobody
 * else: up to `perChannel` (4) in flight per channel, and one at a time per
 * recipient (a *lane*: channel and recipient), oldest first. A reply waiting for
 * its retry keeps the later replies to the same recipient waiting behind it, so
 * the parts of a reply and the replies to a chat arrive in order, and a chat's
 * rate limit (429 with Retry-After) pauses that chat only.
 */
import type { ChannelId, ChannelsConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { InFlight } from '../loops/in-flight.js';
import { ScanLoop } from '../loops/scan-loop.js';
import { stopWithGrace } from '../loops/stop-with-grace.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { type SpanStarter, traced, type WorkSpan } from '../observability/work-span.js';
import type { CommittedSignal } from '../store/committed.js';
import type {
  DeliveryOutboxStore,
  DeliveryRecord,
  DeliveryRoute,
  OutboxItem,
  SessionStore,
} from '../store/types.js';
import { type TimerClock as Clock, systemClock } from '../util/clock.js';
import { correlation, type DeliveryAlerts, REF_ATTRIBUTE, reportFinished } from './delivery/report.js';
import { dependsOnLastRoute, laneOf, type Resolution, resolveRoute, routeOf } from './delivery/route.js';
import { type PartsSent, sendRemainingParts } from './delivery/send-parts.js';
import { type ChannelAdapter, DeliveryError } from './types.js';

export type { DeliveryAlerts } from './delivery/report.js';

export interface DeliveryEngineOptions {
  /** Attempts before a transient failure becomes final. */
  maxAttempts?: number;
  /** First retry delay; doubles each attempt, with jitter. */
  baseDelayMs?: number;
  /** Longest wait between attempts (a platform's Retry-After is capped here too). */
  maxDelayMs?: number;
  /** How often the outbox is read even when no commit said a reply is waiting. */
  pollMs?: number;
  /** Deliveries in flight at once per channel (each to a different recipient). */
  perChannel?: number;
  /** How many outbox heads one pass reads. */
  scanLimit?: number;
  /** How long `stop()` lets deliveries in flight finish before aborting them. */
  stopGraceMs?: number;
  clock?: Clock;
  /** Jitter source, in [0, 1). */
  random?: () => number;
  /** Counts deliveries that ended, by channel and outcome (docs/operating.md, "Metrics"). */
  metrics?: Pick<GatewayMetrics, 'deliveryFinished'>;
  /** Called once a delivery has ended in the store (a run's callback may now be due). */
  onFinished?: (item: OutboxItem) => void;
  /**
   * With tracing on, each attempt is a CLIENT span continuing the trace of the run or
   * heartbeat that made the reply (docs/tracing.md).
   */
  tracing?: SpanStarter;
  /** Alerts (docs/alerts.md): a reply that fails raises one; an alert message is counted, never alerted on. */
  alerts?: DeliveryAlerts;
}

/** What the engine keeps about a delivery in flight: where it goes, for the scan's limits. */
interface Delivering {
  lane: string;
  channel: string;
  mainSessionKey: string;
}

export class DeliveryEngine {
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly pollMs: number;
  private readonly loop: ScanLoop;
  private readonly perChannel: number;
  private readonly scanLimit: number;
  private readonly stopGraceMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly metrics?: Pick<GatewayMetrics, 'deliveryFinished'>;
  private readonly onFinished?: (item: OutboxItem) => void;
  private readonly tracing?: SpanStarter;
  private readonly alerts?: DeliveryAlerts;
  private readonly inFlight: InFlight<Delivering>;

  constructor(
    private readonly store: {
      outbox: DeliveryOutboxStore;
      sessions: Pick<SessionStore, 'getRoute'>;
      /** Wakes the engine once a delivery is committed to the outbox (absent: its poll and `notify`). */
      committed?: CommittedSignal;
    },
    private readonly adapters: ReadonlyMap<ChannelId, ChannelAdapter>,
    private readonly channels: ChannelsConfig,
    private readonly log: Logger,
    options: DeliveryEngineOptions = {},
  ) {
    this.maxAttempts = options.maxAttempts ?? 8;
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 300_000;
    this.pollMs = options.pollMs ?? 1000;
    this.perChannel = options.perChannel ?? 4;
    this.scanLimit = options.scanLimit ?? 128;
    this.stopGraceMs = options.stopGraceMs ?? 5000;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.metrics = options.metrics;
    this.onFinished = options.onFinished;
    this.tracing = options.tracing;
    this.alerts = options.alerts;
    this.loop = new ScanLoop(() => this.scan(), this.clock, this.pollMs, {
      wakeOn: store.committed && { signal: store.committed, kinds: ['outbox'] },
    });
    this.inFlight = new InFlight(this.clock);
  }

  start(): void {
    this.loop.start();
  }

  /** Something may be due: a reply was enqueued, a delivery ended, or a retry time came. */
  notify(): void {
    this.loop.notify();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  /**
   * Starts nothing new, lets deliveries in flight finish for up to `graceMs`,
   * then aborts the rest: their progress is kept (parts sent so far), the
   * interrupted attempt is not counted, and they resume on the next start.
   */
  async stop(graceMs = this.stopGraceMs): Promise<void> {
    await stopWithGrace(this.loop, this.inFlight, graceMs, new Error('the gateway is stopping'));
  }

  /** Deliveries in flight now (for tests and diagnostics). */
  get active(): number {
    return this.inFlight.size;
  }

  /** One pass over the outbox heads: starts every delivery that is due and has room. */
  private async scan(): Promise<void> {
    try {
      const heads = await this.store.outbox.deliveryHeads(this.scanLimit);
      const now = this.clock.now();
      const busyLanes = new Set<string>();
      const perChannel = new Map<string, number>();
      const busySessions = new Set<string>();
      for (const delivery of this.inFlight.abouts()) {
        busyLanes.add(delivery.lane);
        busySessions.add(delivery.mainSessionKey);
        perChannel.set(delivery.channel, (perChannel.get(delivery.channel) ?? 0) + 1);
      }
      let nextDue = Number.POSITIVE_INFINITY;
      for (const head of heads) {
        if (this.stopped) return;
        if (this.inFlight.has(head.id)) continue;
        const olderInSession = busySessions.has(head.mainSessionKey);
        busySessions.add(head.mainSessionKey);
        // A route read from the session's last route waits until the session's older
        // replies are done: delivering one of them may change that route.
        if (!head.resolved && dependsOnLastRoute(head) && olderInSession) continue;
        const resolution = await this.resolve(head);
        if ('record' in resolution) {
          await this.finish(head, resolution.record, this.clock.now());
          continue;
        }
        const { route, adapter } = resolution;
        let item = head;
        if (!item.resolved) {
          await this.store.outbox.resolveDelivery(item.id, route, this.clock.now());
          item = { ...item, resolved: route };
        }
        const lane = laneOf(route);
        if (busyLanes.has(lane)) continue;
        busyLanes.add(lane);
        if (item.nextAttemptAt > now) {
          nextDue = Math.min(nextDue, item.nextAttemptAt);
          continue;
        }
        const running = perChannel.get(route.channel) ?? 0;
        // A full channel is looked at again when one of its deliveries ends.
        if (running >= this.perChannel) continue;
        perChannel.set(route.channel, running + 1);
        this.launch(item, route, adapter, lane);
      }
      this.loop.wakeBy(nextDue);
    } catch (error) {
      this.log.error({ err: error }, 'delivery outbox failed; retrying on the next poll');
    }
  }

  private launch(item: OutboxItem, route: DeliveryRoute, adapter: ChannelAdapter, lane: string): void {
    const delivering = { lane, channel: route.channel, mainSessionKey: item.mainSessionKey };
    const task = (signal: AbortSignal) =>
      this.deliver(item, route, adapter, signal).catch((error: unknown) => {
        // The store failed mid-delivery: the item stays pending and is tried again.
        this.log.error(
          { err: error, ...correlation(item), channel: route.channel },
          'delivery could not be recorded',
        );
      });
    // Once it is no longer in flight, the lane and the channel have room again.
    void this.inFlight.track(item.id, task, delivering).then(() => this.notify());
  }

  private async deliver(
    item: OutboxItem,
    route: DeliveryRoute,
    adapter: ChannelAdapter,
    signal: AbortSignal,
  ): Promise<void> {
    const span = () => ({
      kind: 'client' as const,
      parent: item.traceParent,
      attributes: {
        'agentgate.channel': route.channel,
        'agentgate.delivery_id': item.id,
        [REF_ATTRIBUTE[item.kind]]: item.refId,
        'agentgate.attempt': item.attempts + 1,
      },
    });
    await traced(this.tracing, 'agentgate.delivery', span, (attemptSpan) =>
      this.attempt(item, route, adapter, signal, attemptSpan),
    );
  }

  /** One attempt: the parts not sent yet, in order; then the outcome recorded. */
  private async attempt(
    item: OutboxItem,
    route: DeliveryRoute,
    adapter: ChannelAdapter,
    signal: AbortSignal,
    span: WorkSpan | undefined,
  ): Promise<void> {
    const progress = await sendRemainingParts(item, route, adapter, signal, (sent) =>
      this.store.outbox.markPartsSent(item.id, sent, this.clock.now()),
    );
    if (!('error' in progress)) {
      const delivered = { status: 'delivered' as const, ...routeOf(route), reason: null };
      await this.finish(item, delivered, this.clock.now(), item.attempts + 1);
      return;
    }
    const now = this.clock.now();
    if (progress.sent > item.partsSent) await this.store.outbox.markPartsSent(item.id, progress.sent, now);
    // Stopping: not the platform's failure; the item stays due and resumes on the next start.
    if (signal.aborted) return;
    await this.attemptFailed(item, route, progress, now, span);
  }

  /** A failed attempt: the delivery's end when permanent or out of attempts, else its retry. */
  private async attemptFailed(
    item: OutboxItem,
    route: DeliveryRoute,
    { error, sent, parts }: PartsSent,
    now: number,
    span: WorkSpan | undefined,
  ): Promise<void> {
    const failure = error instanceof DeliveryError ? error : new DeliveryError(String(error), false);
    span?.fail(failure.message, failure.permanent ? 'permanent' : 'temporary');
    const progress = sent > 0 ? ` (${sent} of ${parts} parts were sent)` : '';
    const attempts = item.attempts + 1;
    if (failure.permanent || attempts >= this.maxAttempts) {
      const reason = `${failure.message}${progress}${failure.permanent ? '' : ` (gave up after ${attempts} attempts)`}`;
      await this.finish(item, { status: 'failed', ...routeOf(route), reason }, now, attempts);
      return;
    }
    const next = now + this.retryDelay(attempts, failure.retryAfterMs);
    const fields = { ...correlation(item), channel: route.channel, attempts, reason: failure.message };
    this.log.info({ ...fields, retryAt: Math.round(next) }, 'delivery attempt failed; retrying');
    await this.store.outbox.retryDelivery(item, attempts, next, `${failure.message}${progress}`, now);
  }

  /** Ends a delivery in the store, then counts and logs how it ended (a skip is neither counted nor a warning). */
  private async finish(
    item: OutboxItem,
    record: DeliveryRecord,
    now: number,
    attempts?: number,
  ): Promise<void> {
    // Only a reply's failure raises an alert, enqueued with the failure (docs/alerts.md).
    const alert =
      record.status === 'failed' && item.kind !== 'alert'
        ? await this.alerts?.forDelivery(item, record.channel, record.reason)
        : undefined;
    const outcome = await this.store.outbox.finishDelivery(item, record, now, alert);
    this.onFinished?.(item);
    if (alert) {
      this.alerts?.recorded(alert, outcome);
      if (outcome === 'queued') this.notify();
    }
    reportFinished({ log: this.log, metrics: this.metrics, alerts: this.alerts }, item, record, attempts);
  }

  private async resolve(item: OutboxItem): Promise<Resolution> {
    const last = item.resolved ? undefined : await this.store.sessions.getRoute(item.mainSessionKey);
    return resolveRoute(item, last, this.channels, this.adapters);
  }

  private retryDelay(attempt: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return Math.min(Math.max(retryAfterMs, 0), this.maxDelayMs);
    const exponential = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
    return exponential / 2 + this.random() * (exponential / 2);
  }
}
