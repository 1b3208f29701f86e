/**
 * The wake-up discipline of the engines that work through a store's due items
 * (deliveries, callbacks): a scan every `pollMs` as the safety net, and one
 * whenever `notify` says something may be due. A notify while a scan runs asks
 * for one more scan right after it, never two at once, so a burst of
 * notifications costs at most two scans. `wakeBy` arms one timer for the
 * earliest retry time an engine has seen, so a due retry does not wait for the poll.
 */
import type { Clock } from '../util/clock.js';

export class ScanLoop {
  private cancelPoll?: () => void;
  private cancelWake?: () => void;
  private wakeAt = Number.POSITIVE_INFINITY;
  private scanning?: Promise<void>;
  private again = false;
  private isStopped = false;

  constructor(
    private readonly scan: () => Promise<void>,
    private readonly clock: Pick<Clock, 'now' | 'setTimeout'>,
    private readonly pollMs: number,
  ) {}

  get stopped(): boolean {
    return this.isStopped;
  }

  start(): void {
    const poll = () => {
      this.cancelPoll = this.clock.setTimeout(poll, this.pollMs);
      this.notify();
    };
    poll();
  }

  notify(): void {
    if (this.isStopped) return;
    if (this.scanning) {
      this.again = true;
      return;
    }
    this.scanning = this.scan().finally(() => {
      this.scanning = undefined;
      if (this.again) {
        this.again = false;
        this.notify();
      }
    });
  }

  /** A scan at `at` (ms since the epoch), unless one is already set for earlier. */
  wakeBy(at: number): void {
    if (this.isStopped || !Number.isFinite(at) || at >= this.wakeAt) return;
    this.cancelWake?.();
    this.wakeAt = at;
    this.cancelWake = this.clock.setTimeout(
      () => {
        this.wakeAt = Number.POSITIVE_INFINITY;
        this.cancelWake = undefined;
        this.notify();
      },
      Math.max(0, at - this.clock.now()),
    );
  }

  /** No scan starts after this; settles once the one running, if any, has ended. */
  async stop(): Promise<void> {
    this.isStopped = true;
    this.cancelPoll?.();
    this.cancelWake?.();
    await this.scanning;
  }
}
