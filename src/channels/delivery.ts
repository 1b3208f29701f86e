/**
 * Delivers a reply to a messaging channel (CONTRACT §5): resolves `last` to the
 * main session's last route (else the first configured channel), sends through
 * the platform adapter with a few bounded retries, records the route on
 * success, and reports the outcome for the run or heartbeat record.
 */
import { CHANNEL_IDS, type ChannelId, type ChannelsConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { DeliveryRecord, SessionStore } from '../store/types.js';
import { type ChannelAdapter, DeliveryError } from './types.js';

export interface DeliveryRequest {
  mainSessionKey: string;
  channel: string;
  to: string | null;
  text: string;
}

export interface DeliveryOptions {
  attempts?: number;
  /** First retry delay; doubles each time, with jitter; a platform's Retry-After wins. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class DeliveryService {
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(
    private readonly store: Pick<SessionStore, 'getRoute' | 'setRoute'>,
    private readonly adapters: ReadonlyMap<ChannelId, ChannelAdapter>,
    private readonly channels: ChannelsConfig,
    private readonly log: Logger,
    options: DeliveryOptions = {},
  ) {
    this.attempts = options.attempts ?? 3;
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
  }

  async deliver(request: DeliveryRequest): Promise<DeliveryRecord> {
    const route = await this.store.getRoute(request.mainSessionKey);
    let channel: string | undefined = request.channel;
    let to = request.to;
    if (channel === 'last') {
      channel = route?.channel ?? CHANNEL_IDS.find((id) => this.channels[id] !== undefined);
      if (route && channel === route.channel) to ??= route.to;
    } else if (route?.channel === channel) {
      to ??= route.to;
    }
    if (channel === undefined) return outcome('skipped', null, to, 'no channel is configured');
    const adapter = this.adapters.get(channel as ChannelId);
    if (!adapter) return outcome('failed', channel, to, `delivery to ${channel} is not available`);
    if (!to) {
      return outcome(
        'skipped',
        channel,
        null,
        `no recipient for ${channel}: pass "to", or deliver once with one to set the last route`,
      );
    }

    for (let attempt = 1; ; attempt++) {
      try {
        await adapter.send({ to, text: request.text });
        await this.store.setRoute(request.mainSessionKey, { channel, to }, Date.now());
        return outcome('delivered', channel, to, null);
      } catch (error) {
        const failure = error instanceof DeliveryError ? error : new DeliveryError(String(error), false);
        if (failure.permanent || attempt >= this.attempts) {
          this.log.warn({ channel, attempt, reason: failure.message }, 'delivery failed');
          return outcome('failed', channel, to, failure.message);
        }
        await sleep(this.retryDelay(attempt, failure.retryAfterMs));
      }
    }
  }

  private retryDelay(attempt: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return Math.min(retryAfterMs, this.maxDelayMs);
    const exponential = this.baseDelayMs * 2 ** (attempt - 1);
    return Math.min(this.maxDelayMs, exponential / 2 + Math.random() * (exponential / 2));
  }
}

function outcome(
  status: DeliveryRecord['status'],
  channel: string | null,
  to: string | null,
  reason: string | null,
): DeliveryRecord {
  return { status, channel, to, reason };
}
