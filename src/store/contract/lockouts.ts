/**
 * The auth-failure lockout ledger (docs/authentication.md, docs/postgres.md): the
 * failures of each address counted across replicas, and the locks in force.
 */

/** When an address is locked out (docs/authentication.md): `maxFailures` within `windowMs` lock it for `lockoutMs`. */
export interface LockoutPolicy {
  maxFailures: number;
  windowMs: number;
  lockoutMs: number;
}

/** A lockout in force: the address key (IPv6 by /64) and when it ends (ms since the epoch). */
export interface AddressLock {
  key: string;
  until: number;
}

/**
 * What the ledger made of one failure: 'counted' (within the limit), 'locked'
 * (the failure that reached the limit: still answered 401, and the lock begins)
 * or 'refused' (the address was already locked: answered 429); `until` is the
 * lock's end.
 */
export type LedgerVerdict = { outcome: 'counted' } | { outcome: 'locked' | 'refused'; until: number };

/**
 * Auth failures counted across replicas (docs/postgres.md), the `replicas` part's
 * `lockouts`. PostgreSQL's counts in a table every replica shares; a SQLite file has
 * one process, whose in-memory count is the whole count, so its ledger counts
 * nothing and the gateway does not use it (`replicas.shared` is false).
 */
export interface LockoutLedger {
  /**
   * Counts these failures and returns a verdict for each, in order, once they
   * are committed; a lock that begins is announced to every replica (`watchLocks`).
   */
  recordFailures(
    failures: readonly { key: string; at: number }[],
    policy: LockoutPolicy,
  ): Promise<LedgerVerdict[]>;
  /** Forgets these addresses' failures unless they are locked (a success outside a lockout). */
  reset(keys: readonly string[], now: number): Promise<void>;
  /** The locks in force at `now`, for a replica that starts or missed announcements. */
  activeLocks(now: number): Promise<AddressLock[]>;
  /** Calls `listener` with each lock any replica starts; with undefined when some may have been missed. */
  watchLocks(listener: (lock: AddressLock | undefined) => void): () => void;
  /** Drops rows with nothing left to remember; returns how many. */
  prune(now: number, windowMs: number): Promise<number>;
}
