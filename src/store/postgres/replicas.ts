/**
 * PostgreSQL's replicas part (store/contract/replicas.ts): any number of gateway
 * processes share the database, so streamed runs' pieces go out with NOTIFY on
 * `agentgate_delta` and come back on the store's listening connection
 * (work-listener.ts), and the lockout is counted in `auth_failures`
 * (lockout-ledger.ts) — docs/postgres.md.
 */
import type pg from 'pg';
import type { ReplicaStore } from '../types.js';
import { PgLockoutLedger } from './lockout-ledger.js';
import { DELTA_CHANNEL, type WorkListener } from './work-listener.js';

export class PgReplicas implements ReplicaStore {
  readonly shared = true;
  readonly lockouts: PgLockoutLedger;

  constructor(
    private readonly pool: pg.Pool,
    private readonly listener: WorkListener,
    private readonly ready: Promise<void>,
  ) {
    this.lockouts = new PgLockoutLedger(pool, listener, ready);
  }

  /**
   * One NOTIFY of its own, outside any transaction, on a pooled connection: it is
   * delivered as soon as this statement ends. The caller sends a run's parts one after
   * another, so they arrive in order.
   */
  async sendDelta(payload: string): Promise<void> {
    await this.ready;
    await this.pool.query('SELECT pg_notify($1, $2)', [DELTA_CHANNEL, payload]);
  }

  watchDeltas(listener: (payload: string | undefined) => void): () => void {
    return this.listener.subscribe(DELTA_CHANNEL, listener);
  }
}
