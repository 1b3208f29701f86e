/**
 * The completion-callback outbox on PostgreSQL (docs/callers.md, "Across PostgreSQL
 * replicas"). As on
 * SQLite, a callback row is written with its run at acceptance ('waiting') and
 * armed in the transaction that makes the run's result final. Across replicas
 * each attempt is leased: `claimCallbacks` takes due rows with
 * `FOR UPDATE SKIP LOCKED` and a lease that outlives one HTTP attempt, so two
 * replicas never send the same attempt; a replica that dies mid-attempt leaves
 * a lease that expires, and another replica sends the attempt again (the
 * receiver dedupes on `webhook-id`). Every result is fenced by the lease owner.
 */
import type pg from 'pg';
import { uuidv7 } from '../../util/ids.js';
import type { CommitSignals } from '../commit-signals.js';
import { type CallbackRow, toCallbackItem } from '../rows.js';
import type {
  AlertOutcome,
  CallbackAttempt,
  CallbackItem,
  CallbackOutboxStore,
  NewAlert,
  NewRun,
} from '../types.js';
import { enqueueAlertsInTx } from './alerts.js';
import { inTransaction, type Pipeline, read, type Tx } from './db.js';

/** Queued in the accept's pipelined transaction: each run's callback, waiting for its result. */
export function insertCallbacksInTx(tx: Pipeline, runs: readonly NewRun[]): void {
  const withCallback = runs.filter((run) => run.callbackUrl);
  if (withCallback.length === 0) return;
  tx.send(
    `WITH c AS (
       INSERT INTO callbacks (id, run_id, url, created_at, updated_at)
       SELECT id, run_id, url, at, at FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[])
              AS t(id, run_id, url, at)
       RETURNING run_id)
     UPDATE runs SET callback_status = 'pending' FROM c WHERE runs.id = c.run_id`,
    [
      withCallback.map((run) => `msg_${uuidv7(run.createdAt)}`),
      withCallback.map((run) => run.id),
      withCallback.map((run) => run.callbackUrl),
      withCallback.map((run) => run.createdAt),
    ],
  );
}

/** For use inside the transaction that makes a run's result final; a second call does nothing. */
export async function armCallbackInTx(
  tx: Tx,
  runId: string,
  now: number,
  traceParent: string | null = null,
): Promise<void> {
  await tx.query(
    `UPDATE callbacks SET status = 'pending', armed_at = $1, next_attempt_at = $1, updated_at = $1,
                          trace_parent = $3
      WHERE run_id = $2 AND status = 'waiting'`,
    [now, runId, traceParent],
  );
}

export class PgCallbacks implements CallbackOutboxStore {
  constructor(
    private readonly pool: pg.Pool,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
  ) {}

  async claimCallbacks(owner: string, now: number, leaseMs: number, limit: number): Promise<CallbackItem[]> {
    if (limit <= 0) return [];
    const rows = await read<CallbackRow>(
      this.pool,
      `WITH due AS (
         SELECT seq FROM callbacks
          WHERE status = 'pending' AND next_attempt_at <= $2 AND (lease_owner IS NULL OR lease_until < $2)
          ORDER BY next_attempt_at, seq LIMIT $4
          FOR UPDATE SKIP LOCKED)
       UPDATE callbacks SET lease_owner = $1, lease_until = $3 FROM due WHERE callbacks.seq = due.seq
       RETURNING callbacks.id, callbacks.run_id, callbacks.url, callbacks.attempts, callbacks.armed_at,
                 callbacks.next_attempt_at, callbacks.body, callbacks.trace_parent`,
      [owner, now, now + leaseMs, limit],
    );
    return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at).map(toCallbackItem);
  }

  async retryCallback(
    item: CallbackItem,
    owner: string,
    a: CallbackAttempt & { nextAttemptAt: number },
  ): Promise<boolean> {
    return inTransaction(this.pool, async (tx) => {
      const changed = await tx.query(
        `UPDATE callbacks SET attempts = $1, next_attempt_at = $2, body = $3, last_error = $4, updated_at = $5,
                              lease_owner = NULL, lease_until = NULL
          WHERE id = $6 AND lease_owner = $7 AND status = 'pending'`,
        [a.attempts, a.nextAttemptAt, a.body, a.error, a.now, item.id, owner],
      );
      if (changed.rowCount !== 1) return false;
      await tx.query(`UPDATE runs SET callback_status = 'pending', callback_attempts = $1 WHERE id = $2`, [
        a.attempts,
        item.runId,
      ]);
      return true;
    });
  }

  async finishCallback(
    item: CallbackItem,
    owner: string,
    a: CallbackAttempt & { status: 'delivered' | 'failed'; alert?: NewAlert },
  ): Promise<boolean | AlertOutcome> {
    const outcome = await inTransaction(this.pool, async (tx): Promise<boolean | AlertOutcome> => {
      const changed = await tx.query(
        `UPDATE callbacks SET status = $1, attempts = $2, body = $3, last_error = $4, updated_at = $5,
                              next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL
          WHERE id = $6 AND lease_owner = $7 AND status = 'pending'`,
        [a.status, a.attempts, a.body, a.error, a.now, item.id, owner],
      );
      if (changed.rowCount !== 1) return false;
      await tx.query('UPDATE runs SET callback_status = $1, callback_attempts = $2 WHERE id = $3', [
        a.status,
        a.attempts,
        item.runId,
      ]);
      if (!a.alert || a.status !== 'failed') return true;
      const [outcome] = await enqueueAlertsInTx(
        (text, values) => tx.query(text, values),
        [{ alert: a.alert, now: a.now }],
      );
      return outcome ?? true;
    });
    this.signals.callbackFinished(outcome);
    return outcome;
  }
}

/** Finished callbacks older than `olderThan` (their run keeps the outcome). */
export async function pruneCallbacksInTx(tx: Tx, olderThan: number): Promise<void> {
  await tx.query(`DELETE FROM callbacks WHERE status IN ('delivered', 'failed') AND updated_at <= $1`, [
    olderThan,
  ]);
}
