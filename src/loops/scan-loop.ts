/**
 * The wake-up discipline of every background loop that works through a store's
 * due items (runs, deliveries, callbacks, retention, alert summaries; see
 * docs/architecture.md, "Background loops"): a scan every `pollMs` as the safety
 * net, one whenever `notify` says something may be due, and one after each
 * commit of the kinds it listens to (`wakeOn`, the store's `committed` signal).
 * A notify while a scan runs asks for one more scan right after it, never two at
 * once, so a burst of notifications costs at most two scans. `wakeBy` arms one
 * timer for the earliest retry time a loop has seen, so a due retry does not
 * wait for the poll.
 */
import type { CommittedSignal, WorkKind } from '../store/committed.js';
import type { Clock } from '../util/clock.js';

export interface ScanLoopOptions {
  /** The commits that wake it: subscribed at start, dropped at stop. */
  wakeOn?: { signal: CommittedSignal; kinds: readonly WorkKind[] };
  /**
   * Starts a notified scan on the next turn of the event loop, so the notifications
   * of one turn (a group commit's accepts) cost one scan; default at once.
   */
  deferred?: boolean;
  /** Whether `start` scans at once (default) or first after one `pollMs`. */
  scanAtStart?: boolean;
}

export class ScanLoop {
  private cancelPoll?: () => void;
  private cancelWake?: () => void;
  private wakeAt = Number.POSITIVE_INFINITY;
  private scanning?: Promise<void>;
  private again = false;
  private isStopped = false;
  private unsubscribe: (() => void)[] = [];

  constructor(
    private readonly scan: () => Promise<void>,
    private readonly clock: Pick<Clock, 'now' | 'setTimeout'>,
    private readonly pollMs: number,
    private readonly options: ScanLoopOptions = {},
  ) {}

  get stopped(): boolean {
    return this.isStopped;
  }

  start(): void {
    const { wakeOn } = this.options;
    if (wakeOn) this.unsubscribe = wakeOn.kinds.map((kind) => wakeOn.signal.on(kind, () => this.notify()));
    const poll = () => {
      this.cancelPoll = this.clock.setTimeout(poll, this.pollMs);
      this.notify();
    };
    if (this.options.scanAtStart === false) this.cancelPoll = this.clock.setTimeout(poll, this.pollMs);
    else poll();
  }

  notify(): void {
    if (this.isStopped) return;
    if (this.scanning) {
      this.again = true;
      return;
    }
    const scan = this.options.deferred
      ? new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.scanUnlessStopped())
      : this.scan();
    this.scanning = scan.finally(() => {
      this.scanning = undefined;
      if (this.again) {
        this.again = false;
        this.notify();
      }
    });
  }

  /** The deferred scan, once its turn comes: it covers the notifications that came meanwhile. */
  private scanUnlessStopped(): Promise<void> {
    this.again = false;
    return this.isStopped ? Promise.resolve() : this.scan();
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
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    this.cancelPoll?.();
    this.cancelWake?.();
    await this.scanning;
  }
}
