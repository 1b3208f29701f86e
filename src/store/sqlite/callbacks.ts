/**
 * The completion-callback outbox on SQLite (docs/callers.md). A callback row is
 * written in the transaction that accepts its run ('waiting'), armed in the
 * transaction that makes the run's result final ('pending', due at once), and
 * each attempt's outcome is written together with the run's RunView columns.
 *
 * One process per file: a lease held by another owner was left by a previous
 * process (killed mid-attempt), so it is taken over at once instead of waiting
 * for it to expire.
 */
import type Database from 'better-sqlite3';
import type { CommitSignals } from '../commit-signals.js';
import { type CallbackRow, toCallbackItem } from '../rows.js';
import type { AlertOutcome, CallbackAttempt, CallbackItem, CallbackOutboxStore, NewAlert } from '../types.js';
import type { SqliteAlerts } from './alerts.js';
import { BOUND_LIMIT } from './bound-limit.js';

export class SqliteCallbacks implements CallbackOutboxStore {
  private readonly s;

  constructor(
    private readonly db: Database.Database,
    /** Enqueues a failed callback's alert (docs/alerts.md). */
    private readonly alerts: SqliteAlerts,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
  ) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO callbacks (id, run_id, url, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
      ),
      runPending: db.prepare(`UPDATE runs SET callback_status = 'pending' WHERE id = ?`),
      arm: db.prepare(
        `UPDATE callbacks SET status = 'pending', armed_at = ?, next_attempt_at = ?, updated_at = ?,
                              trace_parent = ?
          WHERE run_id = ? AND status = 'waiting'`,
      ),
      // A read first: the engine polls every second, and a claim that finds nothing due
      // should not take the write lock the accepts' group commits use.
      anyDue: db.prepare<[number], { one: number }>(
        `SELECT 1 AS one FROM callbacks INDEXED BY callbacks_due
          WHERE status = 'pending' AND next_attempt_at <= ? LIMIT 1`,
      ),
      claim: db.prepare<[string, number, number, string, number, number], CallbackRow>(
        `UPDATE callbacks SET lease_owner = ?, lease_until = ?
          WHERE seq IN (SELECT seq FROM callbacks INDEXED BY callbacks_due
                         WHERE status = 'pending' AND next_attempt_at <= ?
                           AND (lease_owner IS NULL OR lease_owner <> ? OR lease_until < ?)
                         ORDER BY next_attempt_at, seq LIMIT ${BOUND_LIMIT})
        RETURNING id, run_id, url, attempts, armed_at, next_attempt_at, body, trace_parent`,
      ),
      retry: db.prepare(
        `UPDATE callbacks SET attempts = ?, next_attempt_at = ?, body = ?, last_error = ?, updated_at = ?,
                              lease_owner = NULL, lease_until = NULL
          WHERE id = ? AND lease_owner = ? AND status = 'pending'`,
      ),
      finish: db.prepare(
        `UPDATE callbacks SET status = ?, attempts = ?, body = ?, last_error = ?, updated_at = ?,
                              next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL
          WHERE id = ? AND lease_owner = ? AND status = 'pending'`,
      ),
      runState: db.prepare('UPDATE runs SET callback_status = ?, callback_attempts = ? WHERE id = ?'),
      prune: db.prepare(`DELETE FROM callbacks WHERE status IN ('delivered', 'failed') AND updated_at <= ?`),
    };
  }

  /** For use inside the accept transaction: the run's callback, waiting for its result. */
  insert(id: string, runId: string, url: string, now: number): void {
    this.s.insert.run(id, runId, url, now, now);
    this.s.runPending.run(runId);
  }

  /** For use inside the transaction that makes a run's result final; a second call does nothing. */
  arm(runId: string, now: number, traceParent: string | null = null): void {
    this.s.arm.run(now, now, now, traceParent, runId);
  }

  async claimCallbacks(owner: string, now: number, leaseMs: number, limit: number): Promise<CallbackItem[]> {
    if (limit <= 0 || !this.s.anyDue.get(now)) return [];
    const rows = this.s.claim.all(owner, now + leaseMs, now, owner, now, limit);
    return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at).map(toCallbackItem);
  }

  async retryCallback(
    item: CallbackItem,
    owner: string,
    a: CallbackAttempt & { nextAttemptAt: number },
  ): Promise<boolean> {
    return this.db
      .transaction(() => {
        const changed = this.s.retry.run(a.attempts, a.nextAttemptAt, a.body, a.error, a.now, item.id, owner);
        if (changed.changes !== 1) return false;
        this.s.runState.run('pending', a.attempts, item.runId);
        return true;
      })
      .immediate();
  }

  async finishCallback(
    item: CallbackItem,
    owner: string,
    a: CallbackAttempt & { status: 'delivered' | 'failed'; alert?: NewAlert },
  ): Promise<boolean | AlertOutcome> {
    const outcome = this.db
      .transaction((): boolean | AlertOutcome => {
        const changed = this.s.finish.run(a.status, a.attempts, a.body, a.error, a.now, item.id, owner);
        if (changed.changes !== 1) return false;
        this.s.runState.run(a.status, a.attempts, item.runId);
        return a.alert && a.status === 'failed' ? this.alerts.enqueue(a.alert, a.now) : true;
      })
      .immediate();
    this.signals.callbackFinished(outcome);
    return outcome;
  }

  /** Finished callbacks older than `olderThan` (their run keeps the outcome); returns how many. */
  prune(olderThan: number): number {
    return this.s.prune.run(olderThan).changes;
  }
}
