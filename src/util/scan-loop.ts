/**
 * The wake-up discipline of the engines that work through a store's due items
 * (deliveries, callbacks): a scan every `pollMs` as the safety net, and one
 * whenever `notify` says something may be due. A notify while a scan runs asks
 * for one more scan right after it, never two at once, so a burst of
 * notifications costs at most two scans.
 */
import type { Clock } from './clock.js';

export class ScanLoop {
  private cancelPoll?: () => void;
  private scanning?: Promise<void>;
  private again = false;
  private isStopped = false;

  constructor(
    private readonly scan: () => Promise<void>,
    private readonly clock: Pick<Clock, 'setTimeout'>,
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

  /** No scan starts after this; settles once the one running, if any, has ended. */
  async stop(): Promise<void> {
    this.isStopped = true;
    this.cancelPoll?.();
    await this.scanning;
  }
}
