/**
 * The work a background engine has started and not yet finished — runs,
 * heartbeats, deliveries, callback attempts — each with the controller that
 * aborts it, and the one way every engine stops: start nothing new (the
 * engine's own part), let the work in flight finish for a grace period, then
 * abort what is left and wait for it to settle (docs/agent-runs.md, "Crashes
 * and stops": a stopped run is handed back, a delivery or callback attempt is
 * tried again later).
 */
import type { TimerClock } from '../util/clock.js';

interface Tracked<M> {
  controller: AbortController;
  done: Promise<void>;
  /** What the engine keeps about the work while it runs (its lane, its channel, …). */
  about: M;
}

export class InFlight<M = undefined, K = string> {
  private readonly work = new Map<K, Tracked<M>>();

  constructor(private readonly clock: TimerClock) {}

  get size(): number {
    return this.work.size;
  }

  has(key: K): boolean {
    return this.work.has(key);
  }

  keys(): K[] {
    return [...this.work.keys()];
  }

  /** What was given to `track` about each piece of work in flight. */
  abouts(): M[] {
    return [...this.work.values()].map((entry) => entry.about);
  }

  /**
   * Runs `task` with the signal that aborts it, tracked under `key` until it
   * settles; the returned promise settles with it and never rejects (a task
   * reports its own failures). A key already in flight is the caller's bug.
   */
  track(key: K, task: (signal: AbortSignal) => Promise<unknown>, about?: M): Promise<void> {
    if (this.work.has(key)) throw new Error(`already in flight: ${String(key)}`);
    const controller = new AbortController();
    // Entered before the task starts, so the task sees itself in flight.
    const entry: Tracked<M> = { controller, done: Promise.resolve(), about: about as M };
    this.work.set(key, entry);
    let running: Promise<unknown>;
    try {
      running = task(controller.signal);
    } catch (error) {
      running = Promise.reject(error);
    }
    entry.done = running
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        if (this.work.get(key) === entry) this.work.delete(key);
      });
    return entry.done;
  }

  /**
   * Waits for the work in flight for up to `graceMs` (0: not at all), then
   * aborts what is left with `reason` and waits for it to settle. Says whether
   * it had to abort. Work tracked meanwhile is waited for too.
   */
  async drain(graceMs: number, reason?: unknown): Promise<'finished' | 'aborted'> {
    if (this.work.size === 0) return 'finished';
    if (graceMs > 0) {
      let cancelGrace = () => {};
      const graceOver = new Promise<'grace'>((resolve) => {
        cancelGrace = this.clock.setTimeout(() => resolve('grace'), graceMs);
      });
      const first = await Promise.race([this.settled(), graceOver]);
      cancelGrace();
      if (first !== 'grace') return 'finished';
    }
    for (const { controller } of this.work.values()) controller.abort(reason);
    await this.settled();
    return 'aborted';
  }

  /** Settles once nothing is in flight, including work tracked while waiting. */
  private async settled(): Promise<'settled'> {
    while (this.work.size > 0) await Promise.all([...this.work.values()].map((entry) => entry.done));
    return 'settled';
  }
}
