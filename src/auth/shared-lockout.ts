/**
 * The auth-failure lockout across replicas (CONTRACT §11), on top of each
 * replica's in-memory limiter:
 *
 * - `check` stays a map lookup in memory, so a request with a good token costs
 *   nothing more than on one replica. The memory learns of locks started by
 *   other replicas from the ledger's announcements (LISTEN/NOTIFY, milliseconds),
 *   from the locks in force when it starts, and from a refresh every few
 *   seconds as the safety net for a lost connection.
 * - `fail` counts in memory (so one replica alone locks after 20, as before) and
 *   sends the failure to the shared ledger, batched per event-loop turn; the
 *   ledger locks the address once its failures on all replicas together reach
 *   the limit, and announces it to every replica, this one included.
 * - `succeed` resets the shared count only when this replica had failures of
 *   that address to forget: a database write for every good request would cost
 *   the ingress its speed. A client whose failures all landed on other replicas
 *   keeps them until they leave the 60 s window.
 *
 * While the database is unreachable the ledger's writes fail; the in-memory
 * limiter goes on alone (per replica) and a warning is logged once a minute.
 */
import type { Logger } from '../log.js';
import type { AddressLock, LockoutLedger } from '../store/types.js';
import { addressKey } from './address-key.js';
import type { AuthFailureLimiter, AuthLimiter, FailOutcome, LockState } from './auth-limiter.js';

const REFRESH_MS = 5_000;
const WARN_EVERY_MS = 60_000;

export class SharedLockout implements AuthLimiter {
  private pending: { key: string; at: number }[] = [];
  private flushScheduled = false;
  private readonly inFlight = new Set<Promise<void>>();
  private unwatch: (() => void) | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private lastWarning = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly local: AuthFailureLimiter,
    private readonly ledger: LockoutLedger,
    private readonly log?: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Subscribes to lock announcements and loads the locks in force. */
  async start(): Promise<void> {
    this.unwatch = this.ledger.watchLocks((lock) => (lock ? this.take(lock) : void this.refresh()));
    this.refreshTimer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.refreshTimer.unref();
    await this.refresh();
  }

  check(address: string): LockState {
    return this.local.check(address);
  }

  fail(address: string): FailOutcome {
    const outcome = this.local.fail(address);
    this.pending.push({ key: addressKey(address), at: this.clock() });
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    return outcome;
  }

  succeed(address: string): void {
    if (!this.local.succeed(address)) return;
    this.track(this.ledger.reset(addressKey(address), this.clock()));
  }

  sweep(): void {
    this.local.sweep();
    this.track(this.ledger.prune(this.clock(), this.local.options.windowMs).then(() => {}));
  }

  /** Stops listening and waits for the failures already counted to reach the ledger. */
  async stop(): Promise<void> {
    this.unwatch?.();
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    if (this.pending.length > 0) this.flush();
    await Promise.allSettled([...this.inFlight]);
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    const { maxFailures, windowMs, lockoutMs } = this.local.options;
    this.track(this.ledger.recordFailures(batch, { maxFailures, windowMs, lockoutMs }));
  }

  private async refresh(): Promise<void> {
    try {
      for (const lock of await this.ledger.activeLocks(this.clock())) this.take(lock);
    } catch (error) {
      this.warn(error);
    }
  }

  private take(lock: AddressLock): void {
    this.local.lockKey(lock.key, lock.until);
  }

  private track(work: Promise<void>): void {
    const tracked = work.catch((error) => this.warn(error));
    this.inFlight.add(tracked);
    tracked.finally(() => this.inFlight.delete(tracked));
  }

  private warn(error: unknown): void {
    const now = this.clock();
    if (now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.log?.warn(
      { err: error },
      'auth lockout: the shared failure count is unreachable; failures are counted per replica until it returns',
    );
  }
}
