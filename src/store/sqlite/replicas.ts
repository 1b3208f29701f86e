/**
 * SQLite's replicas part (store/contract/replicas.ts): a SQLite file has one
 * gateway process (its writer lock: writer-lock.ts), so that process is the only
 * replica. Nothing is published or received, and the ledger counts nothing: the
 * gateway reads `shared: false` and keeps the in-memory lockout alone, which is
 * the whole count (docs/authentication.md).
 */
import type { LockoutLedger, ReplicaStore } from '../types.js';

const NO_LEDGER: LockoutLedger = {
  recordFailures: async (failures) => failures.map(() => ({ outcome: 'counted' as const })),
  reset: async () => {},
  activeLocks: async () => [],
  watchLocks: () => () => {},
  prune: async () => 0,
};

export const SOLE_REPLICA: ReplicaStore = {
  shared: false,
  sendDelta: async () => {},
  watchDeltas: () => () => {},
  lockouts: NO_LEDGER,
};
