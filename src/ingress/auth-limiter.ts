/**
 * Auth-failure lockout per client address (CONTRACT §4): 20 failures within
 * 60 s lock the address out for 60 s; a success outside a lockout resets the
 * count. Memory is bounded: the oldest addresses are evicted first.
 */
export interface LimiterOptions {
  maxFailures: number;
  windowMs: number;
  lockoutMs: number;
  /** Upper bound on tracked addresses. */
  maxTracked: number;
}

export const DEFAULT_LIMITER_OPTIONS: LimiterOptions = {
  maxFailures: 20,
  windowMs: 60_000,
  lockoutMs: 60_000,
  maxTracked: 10_000,
};

interface Entry {
  /** Failure times inside the window, oldest first. */
  failures: number[];
  lockedUntil: number;
}

export type LockState = { locked: false } | { locked: true; retryAfterSeconds: number };

export class AuthFailureLimiter {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly options: LimiterOptions = DEFAULT_LIMITER_OPTIONS,
    private readonly clock: () => number = Date.now,
  ) {}

  check(address: string): LockState {
    const entry = this.entries.get(address);
    if (!entry) return { locked: false };
    const now = this.clock();
    if (entry.lockedUntil > now) {
      return { locked: true, retryAfterSeconds: Math.max(1, Math.ceil((entry.lockedUntil - now) / 1000)) };
    }
    return { locked: false };
  }

  /** Records a failure; returns true when this failure started a lockout. */
  fail(address: string): boolean {
    const now = this.clock();
    let entry = this.entries.get(address);
    if (entry) {
      this.entries.delete(address); // re-insert below: Map order doubles as recency order
    } else {
      entry = { failures: [], lockedUntil: 0 };
      this.evictIfFull();
    }
    this.entries.set(address, entry);
    const windowStart = now - this.options.windowMs;
    while (entry.failures.length > 0 && (entry.failures[0] as number) <= windowStart) entry.failures.shift();
    entry.failures.push(now);
    if (entry.failures.length >= this.options.maxFailures) {
      entry.failures = [];
      entry.lockedUntil = now + this.options.lockoutMs;
      return true;
    }
    return false;
  }

  succeed(address: string): void {
    const entry = this.entries.get(address);
    if (entry && entry.lockedUntil <= this.clock()) this.entries.delete(address);
  }

  /** Drops entries with nothing left to remember. */
  sweep(): void {
    const now = this.clock();
    const windowStart = now - this.options.windowMs;
    for (const [address, entry] of this.entries) {
      const lastFailure = entry.failures[entry.failures.length - 1] ?? 0;
      if (entry.lockedUntil <= now && lastFailure <= windowStart) this.entries.delete(address);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  private evictIfFull(): void {
    if (this.entries.size < this.options.maxTracked) return;
    this.sweep();
    while (this.entries.size >= this.options.maxTracked) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }
}
