/**
 * The auth-failure lockout across replicas (docs/postgres.md), on top of each
 * replica's in-memory limiter:
 *
 * - `check` stays a map lookup in memory, so a request with a good token costs
 *   nothing more than on one replica. The memory learns of locks from the
 *   ledger's verdicts, from its announcements (LISTEN/NOTIFY, milliseconds),
 *   from the locks in force when it starts, and from a refresh every few
 *   seconds as the safety net for a lost connection.
 * - `fail` settles once the failure is counted in the shared ledger, so the
 *   guard knows whether it was one of the 20 (401) or came after the address
 *   got locked on any replica (429). Failures wait for one round trip at a
 *   time: those arriving while it is out share the next one, so a flood costs
 *   a batch per round trip, not a round trip per request.
 * - `succeed` sends a reset only when this replica had sent failures of that
 *   address, and does not wait for it: a good request never waits on the
 *   database. A client whose failures all landed on other replicas keeps them
 *   until they leave the 60 s window.
 *
 * While the ledger is unreachable (an error, or no answer within
 * LEDGER_TIMEOUT_MS), failures are counted by this replica alone, as on one
 * process, for RETRY_MS before the ledger is tried again; a warning is logged
 * once a minute.
 */
import type { Logger } from '../log.js';
import type { AddressLock, LedgerVerdict, LockoutLedger } from '../store/types.js';
import { addressKey } from './address-key.js';
import type { AuthFailureLimiter, AuthLimiter, FailOutcome, LockState } from './auth-limiter.js';
import { RecentFailures } from './recent-failures.js';

const REFRESH_MS = 5_000;
const WARN_EVERY_MS = 60_000;
/** Longest a failed request waits for the ledger before it is counted here alone. */
const LEDGER_TIMEOUT_MS = 2_000;
/** After the ledger failed, how long failures are counted here alone before it is tried again. */
const RETRY_MS = 5_000;

interface PendingFailure {
  address: string;
  key: string;
  at: number;
  settle: (outcome: FailOutcome) => void;
}

export class SharedLockout implements AuthLimiter {
  private queue: PendingFailure[] = [];
  private resets = new Set<string>();
  private draining: Promise<void> | undefined;
  private readonly recent: RecentFailures;
  private readonly background = new Set<Promise<void>>();
  private unwatch: (() => void) | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private ledgerDownUntil = Number.NEGATIVE_INFINITY;
  private lastWarning = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly local: AuthFailureLimiter,
    private readonly ledger: LockoutLedger,
    private readonly log?: Logger,
    private readonly clock: () => number = Date.now,
  ) {
    this.recent = new RecentFailures(local.options.maxTracked);
  }

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

  fail(address: string): Promise<FailOutcome> {
    const at = this.clock();
    if (at < this.ledgerDownUntil) return Promise.resolve(this.local.fail(address));
    return new Promise((settle) => {
      this.queue.push({ address, key: addressKey(address), at, settle });
      this.drain();
    });
  }

  succeed(address: string): void {
    this.local.succeed(address); // the count kept while the ledger was unreachable
    if (this.recent.size === 0) return; // nothing sent anywhere: skip even computing the key
    const key = addressKey(address);
    if (!this.recent.take(key)) return;
    // Queued with the failures, so it reaches the ledger before this address's next failure.
    this.resets.add(key);
    this.drain();
  }

  sweep(): void {
    const now = this.clock();
    this.local.sweep();
    this.recent.sweep(now, this.local.options.windowMs);
    this.track(this.ledger.prune(now, this.local.options.windowMs).then(() => {}));
  }

  /** Stops listening and waits for the failures already taken to be counted and answered. */
  async stop(): Promise<void> {
    this.unwatch?.();
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    await this.draining;
    await Promise.allSettled([...this.background]);
  }

  /** One round trip at a time; starts on the next turn so that a turn's failures share it. */
  private drain(): void {
    this.draining ??= this.run();
  }

  private async run(): Promise<void> {
    try {
      await new Promise((resolve) => setImmediate(resolve));
      while (this.queue.length > 0 || this.resets.size > 0) await this.send();
    } finally {
      // In the same turn as the last look at the queue, so no failure is left behind.
      this.draining = undefined;
    }
  }

  private async send(): Promise<void> {
    const batch = this.queue;
    const resets = [...this.resets];
    this.queue = [];
    this.resets.clear();
    let verdicts: LedgerVerdict[];
    try {
      const { maxFailures, windowMs, lockoutMs } = this.local.options;
      verdicts = await withTimeout(
        (async () => {
          await this.ledger.reset(resets, this.clock());
          return this.ledger.recordFailures(batch, { maxFailures, windowMs, lockoutMs });
        })(),
        LEDGER_TIMEOUT_MS,
      );
    } catch (error) {
      this.warn(error);
      this.ledgerDownUntil = this.clock() + RETRY_MS;
      for (const failure of batch) failure.settle(this.local.fail(failure.address));
      return;
    }
    for (const [i, failure] of batch.entries())
      failure.settle(this.apply(failure, verdicts[i] as LedgerVerdict));
  }

  /** Keeps what the ledger said in memory: whom to reset on a success, and the lock. */
  private apply(failure: PendingFailure, verdict: LedgerVerdict): FailOutcome {
    if (verdict.outcome === 'counted') {
      this.recent.note(failure.key, failure.at);
      return 'counted';
    }
    this.recent.take(failure.key);
    this.local.lockKey(failure.key, verdict.until);
    return verdict.outcome;
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
    this.background.add(tracked);
    tracked.finally(() => this.background.delete(tracked));
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

/** Rejects when `work` has not settled within `ms` (it goes on; its result is dropped). */
function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
