/**
 * A clock whose time moves only when the test says so (src/util/clock.ts):
 * due timers and intervals then fire in time order. Real I/O (SQLite, the
 * loopback fakes) still runs on its own; tests wait for it with `waitFor`.
 */
import type { Clock } from '../../src/util/clock.js';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
  /** Set for intervals: fired again this much later. */
  every?: number;
}

export class ManualClock implements Clock {
  private timers: Timer[] = [];
  private ids = 0;

  constructor(private current = 1_000_000) {}

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): () => void {
    return this.add({ id: ++this.ids, at: this.current + ms, fn });
  }

  setInterval(fn: () => void, ms: number): () => void {
    return this.add({ id: ++this.ids, at: this.current + ms, fn, every: Math.max(1, ms) });
  }

  /** Timers (one-shot and intervals) not yet fired or cancelled. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing each timer that comes due, earliest first. */
  async advance(ms: number): Promise<void> {
    const until = this.current + ms;
    for (;;) {
      const next = this.timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.current = Math.max(this.current, next.at);
      if (next.every === undefined) this.timers = this.timers.filter((timer) => timer !== next);
      else next.at += next.every;
      next.fn();
      await settle();
    }
    this.current = until;
    await settle();
  }

  private add(timer: Timer): () => void {
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t.id !== timer.id);
    };
  }
}

/** Lets promise chains that need no I/O run (better-sqlite3 answers synchronously). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}
