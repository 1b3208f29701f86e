/**
 * The delivery engine: works through the outbox (CONTRACT §5, issue "delivery,
 * reliably"). For each due reply it fixes the route once — `last` is the main
 * session's last route, else the first configured channel; `to` defaults to the
 * route's recipient — splits the text at the platform's limit, and sends the
 * parts in order, recording each. Transient failures are retried with
 * exponential backoff and jitter, honouring the platform's Retry-After; a
 * permanent failure (bad token, unknown chat) ends the delivery at once with
 * the platform's reason. A restart resumes after the last part sent.
 */
import { CHANNEL_IDS, type ChannelId, type ChannelsConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type {
  DeliveryOutboxStore,
  DeliveryRecord,
  DeliveryRoute,
  OutboxItem,
  SessionStore,
} from '../store/types.js';
import { splitMessage } from './split.js';
import { type ChannelAdapter, DeliveryError } from './types.js';

export interface DeliveryEngineOptions {
  /** Attempts before a transient failure becomes final. */
  maxAttempts?: number;
  /** First retry delay; doubles each attempt, with jitter. */
  baseDelayMs?: number;
  /** Longest wait between attempts (a platform's Retry-After is capped here too). */
  maxDelayMs?: number;
  pollMs?: number;
}

type Resolution = { route: DeliveryRoute; adapter: ChannelAdapter } | { record: DeliveryRecord };

export class DeliveryEngine {
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly pollMs: number;
  private timer?: NodeJS.Timeout;
  private draining?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(
    private readonly store: DeliveryOutboxStore & Pick<SessionStore, 'getRoute'>,
    private readonly adapters: ReadonlyMap<ChannelId, ChannelAdapter>,
    private readonly channels: ChannelsConfig,
    private readonly log: Logger,
    options: DeliveryEngineOptions = {},
  ) {
    this.maxAttempts = options.maxAttempts ?? 8;
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 300_000;
    this.pollMs = options.pollMs ?? 1000;
  }

  start(): void {
    this.timer = setInterval(() => this.notify(), this.pollMs);
    this.timer.unref();
    this.notify();
  }

  /** Something may be due: a reply was enqueued, or a retry time came. */
  notify(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.again) {
        this.again = false;
        this.notify();
      }
    });
  }

  /** Stops after the delivery in hand; what is left resumes on the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.draining;
  }

  private async drain(): Promise<void> {
    try {
      for (;;) {
        const due = await this.store.dueDeliveries(Date.now(), 16);
        if (due.length === 0 || this.stopped) return;
        for (const item of due) {
          if (this.stopped) return;
          await this.process(item);
        }
      }
    } catch (error) {
      this.log.error({ err: error }, 'delivery outbox failed; retrying on the next poll');
    }
  }

  private async process(item: OutboxItem): Promise<void> {
    const resolution = await this.resolve(item);
    if ('record' in resolution) {
      await this.store.finishDelivery(item, resolution.record, Date.now());
      return;
    }
    const { route, adapter } = resolution;
    if (!item.resolved) await this.store.resolveDelivery(item.id, route, Date.now());
    const parts = splitMessage(item.text, adapter.maxMessageLength);
    let sent = item.partsSent;
    try {
      while (sent < parts.length) {
        await adapter.send({ to: route.to, text: parts[sent] as string });
        sent++;
        if (sent < parts.length) await this.store.markPartsSent(item.id, sent, Date.now());
      }
    } catch (error) {
      const failure = error instanceof DeliveryError ? error : new DeliveryError(String(error), false);
      const progress = sent > 0 ? ` (${sent} of ${parts.length} parts were sent)` : '';
      if (sent > item.partsSent) await this.store.markPartsSent(item.id, sent, Date.now());
      const attempts = item.attempts + 1;
      if (failure.permanent || attempts >= this.maxAttempts) {
        this.log.warn({ channel: route.channel, attempts, reason: failure.message }, 'delivery failed');
        const reason = `${failure.message}${progress}${failure.permanent ? '' : ` (gave up after ${attempts} attempts)`}`;
        await this.store.finishDelivery(item, { status: 'failed', ...routeOf(route), reason }, Date.now());
        return;
      }
      const next = Date.now() + this.retryDelay(attempts, failure.retryAfterMs);
      await this.store.retryDelivery(item, attempts, next, `${failure.message}${progress}`, Date.now());
      return;
    }
    await this.store.finishDelivery(
      item,
      { status: 'delivered', ...routeOf(route), reason: null },
      Date.now(),
    );
  }

  private async resolve(item: OutboxItem): Promise<Resolution> {
    let route = item.resolved;
    if (!route) {
      const last = await this.store.getRoute(item.mainSessionKey);
      let channel: string | undefined = item.channel;
      let to = item.to;
      if (channel === 'last') {
        channel = last?.channel ?? CHANNEL_IDS.find((id) => this.channels[id] !== undefined);
        if (last && channel === last.channel) to ??= last.to;
      } else if (last?.channel === channel) {
        to ??= last.to;
      }
      if (channel === undefined) return { record: skipped(null, to, 'no channel is configured') };
      if (!to) {
        return {
          record: skipped(
            channel,
            null,
            `no recipient for ${channel}: pass "to", or deliver once with one to set the last route`,
          ),
        };
      }
      route = { channel, to };
    }
    const adapter = this.adapters.get(route.channel as ChannelId);
    if (!adapter) {
      return {
        record: { status: 'failed', ...routeOf(route), reason: `${route.channel} is not configured` },
      };
    }
    return { route, adapter };
  }

  private retryDelay(attempt: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return Math.min(Math.max(retryAfterMs, 0), this.maxDelayMs);
    const exponential = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
    return exponential / 2 + Math.random() * (exponential / 2);
  }
}

const routeOf = (route: DeliveryRoute) => ({ channel: route.channel, to: route.to });
const skipped = (channel: string | null, to: string | null, reason: string): DeliveryRecord => ({
  status: 'skipped',
  channel,
  to,
  reason,
});
