/**
 * A run's steps on SQLite (store/rules/steps.ts; docs/operating.md, "A run's steps" and
 * "Approving tool calls"). Every write is one IMMEDIATE transaction fenced by the lease owner,
 * as a completion is (run-queue.ts): a worker that lost the run writes nothing.
 */
import type Database from 'better-sqlite3';
import {
  decisionOf,
  STEP_COLUMNS,
  type StepRow,
  stepValues,
  toRunStep,
  waitingForColumn,
} from '../rules/steps.js';
import type {
  ApprovalDecision,
  DecideResult,
  NewAlert,
  RunStep,
  RunStepsStore,
  WaitingFor,
  WaitOutcome,
  WorkKind,
} from '../types.js';
import { StoreUnavailableError } from '../types.js';
import { BOUND_LIMIT } from './bound-limit.js';
import type { SqliteTxWriter } from './tx-writer.js';

/** Waiting runs denied per sweep; the next sweep takes the rest. */
export const EXPIRE_BATCH = 1000;

const PLACEHOLDERS = STEP_COLUMNS.split(',')
  .map(() => '?')
  .join(', ');

export class SqliteSteps implements RunStepsStore {
  private readonly s;
  private readonly appendTx;
  private readonly waitTx;
  private readonly decideTx;

  constructor(
    db: Database.Database,
    /** The approval request's alert goes through the writer (store/rules/tx-writer.ts). */
    private readonly writer: Pick<SqliteTxWriter, 'enqueueAlert'>,
    /** Told once a write made work due (committed.ts): a run queued again, an alert to send. */
    private readonly emit: (kind: WorkKind) => void = () => {},
  ) {
    this.s = {
      list: db.prepare<[string], StepRow>(
        `SELECT ${STEP_COLUMNS} FROM run_steps WHERE run_id = ? ORDER BY step_index`,
      ),
      leased: db
        .prepare<[string, string], number>(
          `SELECT 1 FROM runs WHERE id = ? AND lease_owner = ? AND status = 'running'`,
        )
        .pluck(),
      insert: db.prepare(`INSERT OR IGNORE INTO run_steps (${STEP_COLUMNS}) VALUES (${PLACEHOLDERS})`),
      count: db.prepare('UPDATE runs SET steps = steps + 1 WHERE id = ?'),
      // A wait is not an interrupted attempt: like a clean stop's release, it does not count.
      wait: db.prepare(
        `UPDATE runs SET status = 'waiting', lease_owner = NULL, lease_until = NULL,
                         attempts = MAX(attempts - 1, 0), waiting_for = ?, waiting_since = ?
          WHERE id = ? AND lease_owner = ? AND status = 'running'`,
      ),
      request: db.prepare(
        `INSERT OR IGNORE INTO run_approvals (run_id, step_index, tool, arguments, requested_at)
         VALUES (?, ?, ?, ?, ?)`,
      ),
      decideStep: db.prepare(
        `UPDATE run_approvals SET decision = ?, decided_at = ?
          WHERE run_id = ? AND decision IS NULL
            AND step_index = (SELECT json_extract(waiting_for, '$.step') FROM runs WHERE id = ? AND status = 'waiting')`,
      ),
      requeue: db.prepare(
        `UPDATE runs SET status = 'queued', waiting_for = NULL, waiting_since = NULL
          WHERE id = ? AND status = 'waiting'`,
      ),
      decision: db
        .prepare<[string, number], string | null>(
          'SELECT decision FROM run_approvals WHERE run_id = ? AND step_index = ?',
        )
        .pluck(),
      expired: db
        .prepare<[number, number], string>(
          `SELECT id FROM runs WHERE status = 'waiting' AND waiting_since < ? ORDER BY waiting_since LIMIT ${BOUND_LIMIT}`,
        )
        .pluck(),
    };
    this.appendTx = db.transaction((runId: string, owner: string, step: RunStep): boolean => {
      if (this.s.leased.get(runId, owner) === undefined) return false;
      if (this.s.insert.run(stepValues(runId, step)).changes === 1) this.s.count.run(runId);
      return true;
    });
    this.waitTx = db.transaction(
      (runId: string, owner: string, waitingFor: WaitingFor, at: number, alert?: NewAlert) => {
        if (this.s.wait.run(waitingForColumn(waitingFor), at, runId, owner).changes !== 1) return undefined;
        const args = JSON.stringify(waitingFor.arguments);
        this.s.request.run(runId, waitingFor.step, waitingFor.tool, args, at);
        return alert ? this.writer.enqueueAlert(alert, at) : 'none';
      },
    );
    this.decideTx = db.transaction((runId: string, decision: ApprovalDecision, at: number): boolean => {
      this.s.decideStep.run(decision, at, runId, runId);
      return this.s.requeue.run(runId).changes === 1;
    });
  }

  async list(runId: string): Promise<RunStep[]> {
    return this.s.list.all(runId).map(toRunStep);
  }

  async append(runId: string, owner: string, step: RunStep): Promise<boolean> {
    return this.write(() => this.appendTx.immediate(runId, owner, step));
  }

  async wait(
    runId: string,
    owner: string,
    waitingFor: WaitingFor,
    at: number,
    alert?: NewAlert,
  ): Promise<WaitOutcome> {
    const outcome = this.write(() => this.waitTx.immediate(runId, owner, waitingFor, at, alert));
    if (outcome === 'queued') this.emit('outbox');
    if (outcome === undefined) return { waiting: false };
    return outcome === 'none' ? { waiting: true } : { waiting: true, alert: outcome };
  }

  async decide(runId: string, decision: ApprovalDecision, at: number): Promise<DecideResult> {
    const decided = this.write(() => this.decideTx.immediate(runId, decision, at));
    if (decided) this.emit('runs');
    return decided ? 'ok' : 'not_waiting';
  }

  async decision(runId: string, step: number): Promise<ApprovalDecision | undefined> {
    return decisionOf(this.s.decision.get(runId, step));
  }

  async expireWaits(olderThan: number, at: number): Promise<string[]> {
    const denied: string[] = [];
    for (const runId of this.s.expired.all(olderThan, EXPIRE_BATCH)) {
      if ((await this.decide(runId, 'deny', at)) === 'ok') denied.push(runId);
    }
    return denied;
  }

  private write<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
  }
}
