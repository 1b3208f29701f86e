/**
 * Provider limits in one gateway process (docs/agent-runs.md, "Provider limits"): each
 * provider's `maxConcurrent` model calls in flight, the calls beyond it waiting for a slot in
 * order, and the providers that answered 429 for longer than a run's retries wait, until when.
 *
 * A run the worker claims for a provider holds a place (`reserve`) until its first call takes
 * a slot or waits for one, so a claim of several runs at once cannot start more than the cap:
 * a provider's load is its calls in flight, its calls waiting and the runs about to call it.
 */
import type { TimerClock } from '../util/clock.js';
import { abortReason } from './providers/kit/abort.js';

/** What a turn asks of the limits for each model call (agents/turn.ts). */
export interface ModelCallGate {
  /** Waits for a slot for a call to `provider`; resolves with the function that frees it. */
  acquire(provider: string, signal: AbortSignal): Promise<() => void>;
  /** Until when (ms since the epoch) `provider` answers 429 here, or undefined when it does not. */
  limitedUntil(provider: string): number | undefined;
  /** `provider` answered 429 for `waitMs` more than a turn's retries wait. */
  rateLimited(provider: string, waitMs: number): void;
}

interface Lane {
  inFlight: number;
  waiting: { resolve: () => void }[];
  /** Runs claimed for this provider that have not called it yet. */
  starting: number;
}

export class ProviderLimits implements ModelCallGate {
  private readonly lanes = new Map<string, Lane>();
  private readonly limited = new Map<string, number>();
  private readonly freed = new Set<() => void>();

  constructor(
    /** The provider's `maxConcurrent` in the config in force; undefined for none. */
    private readonly capOf: (provider: string) => number | undefined,
    private readonly clock: Pick<TimerClock, 'now'>,
  ) {}

  async acquire(provider: string, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) throw abortReason(signal);
    const lane = this.lane(provider);
    const cap = this.capOf(provider);
    if (cap === undefined || (lane.inFlight < cap && lane.waiting.length === 0)) {
      lane.inFlight++;
      return this.releaser(provider);
    }
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        lane.waiting.splice(lane.waiting.indexOf(waiter), 1);
        reject(abortReason(signal));
      };
      lane.waiting.push(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    return this.releaser(provider);
  }

  /** A run claimed for `provider`, before its first call; the function returned drops it (once). */
  reserve(provider: string): () => void {
    const lane = this.lane(provider);
    lane.starting++;
    let dropped = false;
    return () => {
      if (dropped) return;
      dropped = true;
      lane.starting--;
    };
  }

  /** A gate for one run's calls: its place (`reserve`) is dropped as its first call asks for a slot. */
  forRun(dropReservation: () => void): ModelCallGate {
    return {
      acquire: (provider, signal) => {
        dropReservation();
        return this.acquire(provider, signal);
      },
      limitedUntil: (provider) => this.limitedUntil(provider),
      rateLimited: (provider, waitMs) => this.rateLimited(provider, waitMs),
    };
  }

  /** Whether `provider` has as many calls in flight, waiting or about to be made as its cap. */
  atCap(provider: string): boolean {
    const cap = this.capOf(provider);
    if (cap === undefined) return false;
    const lane = this.lanes.get(provider);
    return lane !== undefined && lane.inFlight + lane.waiting.length + lane.starting >= cap;
  }

  /**
   * Told when a call's slot frees up on a provider that was at its cap with no call waiting: the
   * runs a claim held for it may start now. Returns the function that unsubscribes.
   */
  onFreed(listener: () => void): () => void {
    this.freed.add(listener);
    return () => this.freed.delete(listener);
  }

  /** Calls in flight to `provider` now (for tests and the log). */
  inFlight(provider: string): number {
    return this.lanes.get(provider)?.inFlight ?? 0;
  }

  rateLimited(provider: string, waitMs: number): void {
    const until = this.clock.now() + Math.max(0, waitMs);
    if (until > (this.limited.get(provider) ?? 0)) this.limited.set(provider, until);
  }

  limitedUntil(provider: string): number | undefined {
    const until = this.limited.get(provider);
    if (until === undefined) return undefined;
    if (until > this.clock.now()) return until;
    this.limited.delete(provider);
    return undefined;
  }

  private lane(provider: string): Lane {
    let lane = this.lanes.get(provider);
    if (!lane) {
      lane = { inFlight: 0, waiting: [], starting: 0 };
      this.lanes.set(provider, lane);
    }
    return lane;
  }

  /** Frees the call's slot (once), handing it to the first call waiting. */
  private releaser(provider: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const lane = this.lane(provider);
      const wasAtCap = this.atCap(provider);
      lane.inFlight--;
      // A cap lowered by a reload: the calls beyond it finish before the next one starts.
      const cap = this.capOf(provider) ?? Number.POSITIVE_INFINITY;
      while (lane.inFlight < cap && lane.waiting.length > 0) {
        lane.inFlight++;
        lane.waiting.shift()?.resolve();
      }
      if (wasAtCap && !this.atCap(provider)) for (const listener of this.freed) listener();
    };
  }
}

/**
 * A turn that could not go on: its models' providers answered 429 for longer than its retries
 * wait, fallbacks included. The worker puts the run back in the queue until `until`
 * (agents/worker.ts), or fails it when it has been held back longer than its timeout.
 */
export class RunRateLimited extends Error {
  constructor(
    /** The provider of the last call, the one whose 429 ended the turn. */
    readonly provider: string,
    /** The earliest time one of the turn's providers takes calls again (ms since the epoch). */
    readonly until: number,
    message: string,
  ) {
    super(message);
    this.name = 'RunRateLimited';
  }
}
