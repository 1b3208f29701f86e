/**
 * The hour's summary of suppressed alerts (docs/alerts.md, "The cap"): every replica asks the
 * store now and then whether the oldest suppressed alert is an hour old; the store then turns
 * all of them into one summary message in one transaction, so one replica makes it, once.
 */
import type { Logger } from '../log.js';
import { ScanLoop } from '../loops/scan-loop.js';
import type { DeliveryOutboxStore } from '../store/types.js';
import { type TimerClock as Clock, systemClock } from '../util/clock.js';
import type { Alerts } from './alerts.js';

export interface AlertSummariesOptions {
  /** How often the store is asked (default a minute: a summary is at most this late). */
  pollMs?: number;
  clock?: Clock;
}

export class AlertSummaries {
  private readonly loop: ScanLoop;
  private readonly clock: Clock;

  constructor(
    private readonly store: { outbox: Pick<DeliveryOutboxStore, 'summarizeAlerts'> },
    private readonly alerts: Alerts,
    private readonly log: Logger,
    options: AlertSummariesOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.loop = new ScanLoop(() => this.scan(), this.clock, options.pollMs ?? 60_000);
  }

  start(): void {
    this.loop.start();
  }

  /** Looks now (tests). */
  notify(): void {
    this.loop.notify();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async scan(): Promise<void> {
    // Alerts turned off: suppressed ones wait (a week at most) for them to come back.
    if (!this.alerts.enabled) return;
    try {
      const counts = await this.store.outbox.summarizeAlerts(this.clock.now(), this.alerts.summary);
      if (counts) this.alerts.summarized(counts);
    } catch (error) {
      this.log.error({ err: error }, 'alert summary failed; retrying on the next poll');
    }
  }
}
