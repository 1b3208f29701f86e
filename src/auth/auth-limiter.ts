/**
 * Auth-failure lockout per client address (docs/authentication.md): 20 failures within
 * 60 s lock the address out for 60 s; a success outside a lockout resets the
 * count. Addresses are counted by `addressKey` (IPv6 by its /64).
 *
 * Memory is bounded without ever letting a lockout be washed out:
 * - Addresses still below the limit live in `counting` (at most `maxTracked`,
 *   10 000 ≈ 6 MB with 19 failures each; bench/auth-guard.mjs).
 *   When it is full, the entry whose last failure is oldest is shed — expired
 *   ones first, as they are the oldest. Shedding one costs that address at most
 *   the failures it had so far, never a lockout.
 * - Locked addresses move to `locked`, which is never shed before a lock ends.
 *   It has its own, much larger bound (`maxLocked`, 100 000 ≈ 13 MB): beyond it a
 *   new lockout cannot be recorded, the address goes on being answered 401 (and
 *   counted) and the caller is told once a minute ('overflow') so it can warn.
 *   Refusing every new address instead would hand anyone who owns 100 000 /64s
 *   (two IPv6 /48s) a switch that locks all legitimate clients out.
 *
 * Both maps keep insertion order, so the oldest entry is always the first one
 * and shedding is O(1): `counting` is re-inserted on every failure (order = last
 * failure), `locked` is inserted when the lock starts (order = lock end, all
 * locks being equally long).
 */
import { addressKey } from './address-key.js';

export interface LimiterOptions {
  maxFailures: number;
  windowMs: number;
  lockoutMs: number;
  /** Upper bound on addresses counted but not locked. */
  maxTracked: number;
  /** Upper bound on addresses locked at once (never shed before their lock ends). */
  maxLocked: number;
}

export const DEFAULT_LIMITER_OPTIONS: LimiterOptions = {
  maxFailures: 20,
  windowMs: 60_000,
  lockoutMs: 60_000,
  maxTracked: 10_000,
  maxLocked: 100_000,
};

export type LockState = { locked: false } | { locked: true; retryAfterSeconds: number };

/**
 * What a failure led to: 'counted'; 'locked' (this failure started a lockout);
 * 'overflow' (it should have, but the locked table is full — reported at most
 * once per lockout period, so that a warning is not repeated per request) —
 * all three answered 401; 'refused': the address was locked by the time the
 * failure was counted (it passed `check` just before the lock began), so it is
 * not counted and is answered 429 like any attempt during the lock.
 */
export type FailOutcome = 'counted' | 'locked' | 'overflow' | 'refused';

/**
 * The lockout as the request guards use it. Kept this small so that a
 * store-backed implementation (one count across replicas) can stand in: its
 * `fail` settles once the failure is counted in the shared ledger, while
 * `check` and `succeed` stay synchronous so a good request never waits.
 */
export interface AuthLimiter {
  check(address: string): LockState;
  fail(address: string): FailOutcome | Promise<FailOutcome>;
  /** A success outside a lockout: forget the address's failures. */
  succeed(address: string): void;
  /** Housekeeping, every minute. */
  sweep(): void;
}

const NOT_LOCKED: LockState = Object.freeze({ locked: false });

export class AuthFailureLimiter implements AuthLimiter {
  /** Failure times inside the window (oldest first) of addresses not locked; least recent first. */
  private readonly counting = new Map<string, number[]>();
  /** Lock end per locked address; earliest end first. */
  private readonly locked = new Map<string, number>();
  private lastOverflowReport = Number.NEGATIVE_INFINITY;
  readonly options: LimiterOptions;

  constructor(
    options: Partial<LimiterOptions> = {},
    private readonly clock: () => number = Date.now,
  ) {
    this.options = { ...DEFAULT_LIMITER_OPTIONS, ...options };
  }

  check(address: string): LockState {
    if (this.locked.size === 0) return NOT_LOCKED;
    const key = addressKey(address);
    const lockedUntil = this.locked.get(key);
    if (lockedUntil === undefined) return NOT_LOCKED;
    const now = this.clock();
    if (lockedUntil <= now) {
      this.locked.delete(key); // the lock is over, and its count was reset when it began
      return NOT_LOCKED;
    }
    return { locked: true, retryAfterSeconds: Math.max(1, Math.ceil((lockedUntil - now) / 1000)) };
  }

  fail(address: string): FailOutcome {
    const now = this.clock();
    const key = addressKey(address);
    const lockedUntil = this.locked.get(key);
    if (lockedUntil !== undefined) {
      // A request that passed `check` just before a lock began (its token check was
      // asynchronous, e.g. a sender signature): the lock stands, and it is refused too.
      if (lockedUntil > now) return 'refused';
      this.locked.delete(key);
    }
    let failures = this.counting.get(key);
    if (failures) {
      this.counting.delete(key); // re-inserted below: map order is last-failure order
    } else {
      failures = [];
      this.makeRoomToCount(now);
    }
    const windowStart = now - this.options.windowMs;
    while (failures.length > 0 && (failures[0] as number) <= windowStart) failures.shift();
    failures.push(now);
    if (failures.length < this.options.maxFailures) {
      this.counting.set(key, failures);
      return 'counted';
    }
    this.shedEndedLocks(now);
    if (this.locked.size < this.options.maxLocked) {
      this.locked.set(key, now + this.options.lockoutMs);
      return 'locked';
    }
    // No room to lock: keep counting (at most maxFailures times) so it locks once there is room.
    failures.shift();
    this.counting.set(key, failures);
    if (now - this.lastOverflowReport < this.options.lockoutMs) return 'counted';
    this.lastOverflowReport = now;
    return 'overflow';
  }

  /** Returns true when the address had failures to forget. */
  succeed(address: string): boolean {
    // Nothing to forget for most requests: skip even computing the key.
    if (this.counting.size === 0) return false;
    // A locked address is not in `counting`, so this never ends a lockout early.
    return this.counting.delete(addressKey(address));
  }

  /**
   * Takes on a lock another replica started (by address key), unless one as long
   * is already in force. Subject to the same bound as locks started here.
   */
  lockKey(key: string, until: number): void {
    const now = this.clock();
    if (until <= now || (this.locked.get(key) ?? 0) >= until) return;
    this.shedEndedLocks(now);
    if (!this.locked.has(key) && this.locked.size >= this.options.maxLocked) return;
    this.counting.delete(key);
    this.locked.set(key, until);
  }

  /** Drops entries with nothing left to remember (housekeeping; the bounds hold without it). */
  sweep(): void {
    const now = this.clock();
    this.shedStaleCounts(now);
    this.shedEndedLocks(now);
  }

  /** Addresses counted but not locked, and addresses locked (for tests and metrics). */
  get size(): { counting: number; locked: number } {
    return { counting: this.counting.size, locked: this.locked.size };
  }

  private makeRoomToCount(now: number): void {
    this.shedStaleCounts(now);
    if (this.counting.size < this.options.maxTracked) return;
    // Full of recent failures: the least recent one goes (it was not locked, or it would not be here).
    const oldest = this.counting.keys().next().value;
    if (oldest !== undefined) this.counting.delete(oldest);
  }

  /** Entries whose last failure left the window are at the front; drop them. */
  private shedStaleCounts(now: number): void {
    const windowStart = now - this.options.windowMs;
    for (const [key, failures] of this.counting) {
      if ((failures[failures.length - 1] as number) > windowStart) break;
      this.counting.delete(key);
    }
  }

  /** Ended locks are at the front; drop them. */
  private shedEndedLocks(now: number): void {
    for (const [key, lockedUntil] of this.locked) {
      if (lockedUntil > now) break;
      this.locked.delete(key);
    }
  }
}
