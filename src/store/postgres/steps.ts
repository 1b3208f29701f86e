/**
 * A run's steps on PostgreSQL (store/rules/steps.ts; docs/operating.md, "A run's steps" and
 * "Approving tool calls"). Each write is one statement whose fence locks the run's row
 * (`FOR UPDATE`): a lease taken over, or a decision taken on another replica, between the
 * snapshot and the lock is seen under the lock, so a worker that lost the run writes
 * nothing and a decision applies once, whatever the number of replicas.
 */
import type pg from 'pg';
import {
  decisionOf,
  STEP_COLUMNS,
  type StepRow,
  stepValues,
  toRunStep,
  waitingForColumn,
} from '../rules/steps.js';
import type {
  AlertOutcome,
  ApprovalDecision,
  DecideResult,
  NewAlert,
  RunStep,
  RunStepsStore,
  WaitingFor,
  WaitOutcome,
  WorkKind,
} from '../types.js';
import { enqueueAlertsInTx } from './alerts.js';
import { inTransaction, readPrepared } from './db.js';
import { WORK_CHANNEL } from './work-listener.js';

/**
 * The step (its values `stepValues`, then the owner as $17), only while the owner holds the
 * lease; the run's count moves with a row actually inserted, so an index appended twice counts once.
 */
const APPEND = `
  WITH leased AS (
    SELECT id FROM runs WHERE id = $1 AND lease_owner = $17 AND status = 'running' FOR UPDATE),
  inserted AS (
    INSERT INTO run_steps (${STEP_COLUMNS})
    SELECT $1::text, $2::int, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text,
           $10::text, $11::int8, $12::int8, $13::int8, $14::int8, $15::int8, $16::int8 FROM leased
    ON CONFLICT (run_id, step_index) DO NOTHING RETURNING run_id),
  counted AS (UPDATE runs SET steps = steps + 1 WHERE id IN (SELECT run_id FROM inserted))
  SELECT count(*)::int AS held FROM leased`;

/** A wait is not an interrupted attempt: like a clean stop's release, it does not count. */
const WAIT = `
  WITH waiting AS (
    UPDATE runs SET status = 'waiting', lease_owner = NULL, lease_until = NULL,
                    attempts = GREATEST(attempts - 1, 0), waiting_for = $3, waiting_since = $4
     WHERE id = $1 AND lease_owner = $2 AND status = 'running' RETURNING id),
  requested AS (
    INSERT INTO run_approvals (run_id, step_index, tool, arguments, requested_at)
    SELECT id, $5, $6, $7, $4 FROM waiting ON CONFLICT (run_id, step_index) DO NOTHING)
  SELECT count(*)::int AS n FROM waiting`;

/** The decision on the step the run waits on, and the run queued again: once, under the row's lock. */
const DECIDE = `
  WITH waiting AS (
    SELECT id, (waiting_for::json->>'step')::int AS step FROM runs WHERE id = $1 AND status = 'waiting' FOR UPDATE),
  decided AS (
    UPDATE run_approvals a SET decision = $2, decided_at = $3 FROM waiting w
     WHERE a.run_id = w.id AND a.step_index = w.step AND a.decision IS NULL),
  queued AS (
    UPDATE runs SET status = 'queued', waiting_for = NULL, waiting_since = NULL
     WHERE id IN (SELECT id FROM waiting) RETURNING id)
  SELECT count(*)::int AS n FROM queued`;

const NOTIFY_WORK = `SELECT pg_notify('${WORK_CHANNEL}', '')`;

export class PgSteps implements RunStepsStore {
  constructor(
    private readonly pool: pg.Pool,
    /** Told once a write made work due on this replica (committed.ts). */
    private readonly emit: (kind: WorkKind) => void = () => {},
  ) {}

  async list(runId: string): Promise<RunStep[]> {
    const rows = await readPrepared<StepRow>(
      this.pool,
      `SELECT ${STEP_COLUMNS} FROM run_steps WHERE run_id = $1 ORDER BY step_index`,
      [runId],
    );
    return rows.map(toRunStep);
  }

  async append(runId: string, owner: string, step: RunStep): Promise<boolean> {
    const { rows } = await inTransaction(this.pool, (tx) =>
      tx.query<{ held: number }>(APPEND, [...stepValues(runId, step), owner]),
    );
    return (rows[0]?.held ?? 0) === 1;
  }

  async wait(
    runId: string,
    owner: string,
    waitingFor: WaitingFor,
    at: number,
    alert?: NewAlert,
  ): Promise<WaitOutcome> {
    const outcome = await inTransaction(this.pool, async (tx) => {
      const { rows } = await tx.query<{ n: number }>(WAIT, [
        runId,
        owner,
        waitingForColumn(waitingFor),
        at,
        waitingFor.step,
        waitingFor.tool,
        JSON.stringify(waitingFor.arguments),
      ]);
      if ((rows[0]?.n ?? 0) !== 1) return undefined;
      if (!alert) return 'none';
      const [queued] = await enqueueAlertsInTx(
        (text, values) => tx.query(text, values),
        [{ alert, now: at }],
      );
      return queued;
    });
    if (outcome === 'queued') this.emit('outbox');
    if (outcome === undefined) return { waiting: false };
    return outcome === 'none' ? { waiting: true } : { waiting: true, alert: outcome as AlertOutcome };
  }

  async decide(runId: string, decision: ApprovalDecision, at: number): Promise<DecideResult> {
    const { rows } = await inTransaction(this.pool, (tx) =>
      tx.query<{ n: number }>(DECIDE, [runId, decision, at]),
    );
    if ((rows[0]?.n ?? 0) !== 1) return 'not_waiting';
    // A hint to every replica's worker (they also poll), as a released run sends.
    await this.pool.query(NOTIFY_WORK).catch(() => {});
    this.emit('runs');
    return 'ok';
  }

  async decision(runId: string, step: number): Promise<ApprovalDecision | undefined> {
    const [row] = await readPrepared<{ decision: string | null }>(
      this.pool,
      'SELECT decision FROM run_approvals WHERE run_id = $1 AND step_index = $2',
      [runId, step],
    );
    return decisionOf(row?.decision);
  }

  async expireWaits(olderThan: number, at: number): Promise<string[]> {
    const rows = await readPrepared<{ id: string }>(
      this.pool,
      `SELECT id FROM runs WHERE status = 'waiting' AND waiting_since < $1 ORDER BY waiting_since LIMIT 1000`,
      [olderThan],
    );
    const denied: string[] = [];
    for (const { id } of rows) if ((await this.decide(id, 'deny', at)) === 'ok') denied.push(id);
    return denied;
  }
}
