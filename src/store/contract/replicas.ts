/**
 * The store's replicas part (docs/architecture.md, "The store's parts"): what the
 * gateway processes on one store share beyond its rows — streamed runs' reply
 * pieces (streaming/run-deltas.ts) and the auth-failure lockout ledger
 * (auth/shared-lockout.ts).
 *
 * Every driver has one. PostgreSQL's carries them across replicas (NOTIFY and
 * LISTEN, the `auth_failures` table: docs/postgres.md) and says `shared: true`.
 * A SQLite file has one process (the writer lock), so that process is the only
 * replica: its part says `shared: false`, publishes to no one, never calls a
 * watcher and counts nothing, and the gateway keeps the in-memory lockout
 * alone and does not batch pieces for other replicas.
 */
import type { LockoutLedger } from './lockouts.js';

export interface ReplicaStore {
  /**
   * Whether other processes may share this store. The gateway decides by it, not
   * by what the part can do: true, the lockout is counted in `lockouts` across
   * replicas and a streamed run's pieces are published with `sendDelta`; false,
   * the in-memory limiter is the whole count and pieces stay in this process.
   */
  readonly shared: boolean;
  /** Publishes a streamed run's reply piece to every replica (PostgreSQL NOTIFY). */
  sendDelta(payload: string): Promise<void>;
  /**
   * Calls `listener` with every piece any replica published (undefined after a
   * reconnect: some may have been missed); returns the unsubscribe.
   */
  watchDeltas(listener: (payload: string | undefined) => void): () => void;
  /** The auth-failure count shared by the replicas (docs/authentication.md). */
  readonly lockouts: LockoutLedger;
}
