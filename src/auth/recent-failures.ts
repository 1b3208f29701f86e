/**
 * The addresses whose failures this replica sent to the shared ledger in the
 * last window, so that a success sends a reset only where there is something
 * to forget (docs/postgres.md): a database write per good request would cost
 * the ingress its speed. Bounded like the in-memory limiter's counted table:
 * insertion order is last-failure order, so the oldest entry goes first.
 */
export class RecentFailures {
  private readonly last = new Map<string, number>();

  constructor(private readonly max: number) {}

  note(key: string, at: number): void {
    this.last.delete(key);
    this.last.set(key, at);
    if (this.last.size > this.max) {
      const oldest = this.last.keys().next().value;
      if (oldest !== undefined) this.last.delete(oldest);
    }
  }

  /** Forgets `key`; true when it was there. */
  take(key: string): boolean {
    return this.last.delete(key);
  }

  get size(): number {
    return this.last.size;
  }

  /** Drops the keys whose last failure left the window (they are at the front). */
  sweep(now: number, windowMs: number): void {
    for (const [key, at] of this.last) {
      if (at > now - windowMs) break;
      this.last.delete(key);
    }
  }
}
