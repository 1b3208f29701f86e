/**
 * The operators' reads and writes on PostgreSQL (docs/operating.md, "Admin API"), the same as
 * SQLite's: what any replica answers is read from the database.
 *
 * Lists walk an index newest first by seq and stop at the page size (the
 * primary key; runs_active, runs_failed, runs_timed_out, runs_by_source or runs_by_token
 * for a filter; deliveries_pending or deliveries_failed). A status goes into the SQL
 * as a literal from a closed set, so the planner can prove a partial index
 * applies whatever plan it caches.
 *
 * A bulk retry's runs are read by status and finish time through runs_retryable, each
 * checked for a retry of it through runs_by_retry_of (docs/operating.md, "Bulk retry").
 */

import type pg from 'pg';
import {
  CALLBACK_LIST_COLUMNS,
  type CallbackListRow,
  callbackStatusWhere,
  DELIVERY_LIST_COLUMNS,
  DELIVERY_STATUSES_OF,
  type DeliveryListRow,
  type LastDeliveryRow,
  PROBE_KEY,
  PROBE_SCOPE,
  RUN_LIST_COLUMNS,
  RUN_SUMMARY_COLUMNS,
  type RunListRow,
  type RunSummaryRow,
  toCallbackView,
  toDeliveryView,
  toRunListView,
  toRunSummaryView,
} from '../admin-rows.js';
import type { CommitSignals } from '../commit-signals.js';
import { ATTACHMENT_COLUMNS, type AttachmentRow, NEWEST, RUN_STATUSES, toAttachment } from '../rows.js';
import {
  mayRedeliver,
  planRedelivery,
  REDELIVER_RUN_COLUMNS,
  REDELIVERY_COLUMNS,
  type RedeliverRunRow,
} from '../rules/redeliver.js';
import { toUsageGroup, type UsageGroupRow, usageSummarySql, usageSummaryValues } from '../rules/usage.js';
import { type StoredRunRow, toStoredRun } from '../run-rows.js';
import {
  type AdminStore,
  type Attachment,
  type CallbackView,
  type DeliveryView,
  type ListCallbacksOptions,
  type ListDeliveriesOptions,
  type ListRunsOptions,
  type RedeliverResult,
  type RetryableRuns,
  type RetryableRunsOptions,
  type RunPage,
  type RunSummaryView,
  type StoredRun,
  StoreUnavailableError,
  type UsageGroup,
  type UsageSummaryOptions,
} from '../types.js';
import { inTransaction, read } from './db.js';

export class PgAdmin implements AdminStore {
  constructor(
    private readonly pool: pg.Pool,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
  ) {}

  async usageSummary(options: UsageSummaryOptions): Promise<UsageGroup[]> {
    const rows = await read<UsageGroupRow>(
      this.pool,
      usageSummarySql(options.by, (n) => `$${n}`, options.bucket),
      usageSummaryValues(options),
    );
    return rows.map(toUsageGroup);
  }

  async listRuns(options: ListRunsOptions): Promise<RunPage | undefined> {
    return this.runPage(options, RUN_LIST_COLUMNS, (row: RunListRow) => toRunListView(row));
  }

  async listRunSummaries(options: ListRunsOptions): Promise<RunPage<RunSummaryView> | undefined> {
    return this.runPage(options, RUN_SUMMARY_COLUMNS, (row: RunSummaryRow) => toRunSummaryView(row));
  }

  /** A page of the run list, each row read with `columns`. */
  private async runPage<Row extends pg.QueryResultRow, View extends { runId: string }>(
    options: ListRunsOptions,
    columns: string,
    toView: (row: Row) => View,
  ): Promise<RunPage<View> | undefined> {
    let beforeSeq = NEWEST;
    if (options.before !== undefined) {
      const [found] = await read<{ seq: number }>(this.pool, 'SELECT seq FROM runs WHERE id = $1', [
        options.before,
      ]);
      if (!found) return undefined;
      beforeSeq = found.seq;
    }
    const { status, source, token } = options;
    if (status !== undefined && !RUN_STATUSES.includes(status))
      throw new Error(`unknown run status ${status}`);
    const params: unknown[] = [beforeSeq, options.limit + 1];
    const where = ['seq < $1'];
    if (status !== undefined) where.push(`status = '${status}'`);
    if (source !== undefined) {
      params.push(source);
      where.push(`source = $${params.length}`);
    }
    if (token !== undefined) {
      params.push(token);
      where.push(`token_id = $${params.length}`);
    }
    const rows = await read<Row>(
      this.pool,
      `SELECT ${columns} FROM runs WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $2`,
      params,
    );
    const more = rows.length > options.limit;
    const runs = rows.slice(0, options.limit).map(toView);
    return { runs, next: more ? (runs[runs.length - 1]?.runId ?? null) : null };
  }

  async getAttachment(runId: string, index: number): Promise<Attachment | undefined> {
    const [row] = await read<AttachmentRow>(
      this.pool,
      `SELECT ${ATTACHMENT_COLUMNS} FROM run_attachments WHERE run_id = $1 AND idx = $2`,
      [runId, index],
    );
    return row ? toAttachment(row) : undefined;
  }

  async getStoredRun(runId: string): Promise<StoredRun | undefined> {
    const [row] = await read<StoredRunRow>(
      this.pool,
      // The callback's URL lives with its outbox row (callbacks.run_id).
      `SELECT r.*, c.url AS callback_url FROM runs r LEFT JOIN callbacks c ON c.run_id = r.id WHERE r.id = $1`,
      [runId],
    );
    return row ? toStoredRun(row) : undefined;
  }

  async listRetryableRuns(options: RetryableRunsOptions): Promise<RetryableRuns> {
    const { status, source } = options;
    if (status !== 'failed' && status !== 'timed_out') throw new Error(`not a retryable status: ${status}`);
    const params: unknown[] = [
      options.since ?? Number.MIN_SAFE_INTEGER,
      options.until ?? NEWEST,
      options.limit,
    ];
    const where = [`r.status = '${status}'`, 'r.finished_at >= $1', 'r.finished_at < $2'];
    if (source !== undefined) {
      params.push(source);
      where.push(`r.source = $${params.length}`);
    }
    where.push('NOT EXISTS (SELECT 1 FROM runs x WHERE x.retry_of = r.id)');
    // One statement, one snapshot: the count is taken over every match before the LIMIT.
    const rows = await read<StoredRunRow & { matched: string }>(
      this.pool,
      `SELECT r.*, c.url AS callback_url, count(*) OVER () AS matched
         FROM runs r LEFT JOIN callbacks c ON c.run_id = r.id
        WHERE ${where.join(' AND ')} ORDER BY r.finished_at, r.seq LIMIT $3`,
      params,
    );
    return { matched: Number(rows[0]?.matched ?? 0), runs: rows.map(toStoredRun) };
  }

  async redeliverRun(runId: string, now: number): Promise<RedeliverResult> {
    const result = await inTransaction(this.pool, async (tx): Promise<RedeliverResult> => {
      // The run's row lock orders two redeliveries of one run, from any replicas.
      const { rows } = await tx.query<RedeliverRunRow>(
        `SELECT ${REDELIVER_RUN_COLUMNS} FROM runs WHERE id = $1 FOR UPDATE`,
        [runId],
      );
      const run = rows[0];
      const last = mayRedeliver(run)
        ? (
            await tx.query<LastDeliveryRow>(
              `SELECT channel, recipient, resolved_channel, resolved_to, status FROM deliveries
                WHERE ref_id = $1 AND kind = 'run' ORDER BY seq DESC LIMIT 1`,
              [runId],
            )
          ).rows[0]
        : undefined;
      const plan = planRedelivery(runId, run, last, now);
      if (plan.result !== 'enqueued') return plan.result;
      await tx.query(
        `INSERT INTO deliveries (${REDELIVERY_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        plan.delivery,
      );
      await tx.query(
        `UPDATE runs SET delivery_status = 'pending', delivery_channel = $1, delivery_to = $2, delivery_reason = NULL
          WHERE id = $3`,
        [plan.channel, plan.to, runId],
      );
      return 'enqueued';
    });
    this.signals.redelivered(result);
    return result;
  }

  async listDeliveries(options: ListDeliveriesOptions): Promise<DeliveryView[]> {
    const statuses = options.status === undefined ? undefined : DELIVERY_STATUSES_OF[options.status];
    if (options.status !== undefined && !statuses)
      throw new Error(`unknown delivery status ${options.status}`);
    // Replies only: alert messages (docs/alerts.md) are not replies to redeliver.
    const where = [`kind <> 'alert'`];
    if (statuses) where.unshift(`status IN (${statuses.map((s) => `'${s}'`).join(', ')})`);
    const params: unknown[] = [options.limit];
    // One run's: through deliveries_by_ref.
    if (options.runId !== undefined) {
      params.push(options.runId);
      where.push(`ref_id = $2 AND kind = 'run'`);
    }
    const rows = await read<DeliveryListRow>(
      this.pool,
      `SELECT ${DELIVERY_LIST_COLUMNS} FROM deliveries WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $1`,
      params,
    );
    return rows.map(toDeliveryView);
  }

  async listCallbacks(options: ListCallbacksOptions): Promise<CallbackView[]> {
    const rows = await read<CallbackListRow>(
      this.pool,
      `SELECT ${CALLBACK_LIST_COLUMNS} FROM callbacks ${callbackStatusWhere(options.status)}
        ORDER BY seq DESC LIMIT $1`,
      [options.limit],
    );
    return rows.map(toCallbackView);
  }

  async ping(): Promise<void> {
    await read(this.pool, 'SELECT 1', []);
  }

  async probeCommit(now: number): Promise<void> {
    try {
      // One statement, its own transaction: one round trip, and its commit is a real one
      // (refused on a read-only database or standby, or when the disk is full).
      await this.pool.query(
        `INSERT INTO idempotency (scope, key, body_hash, status, body, created_at) VALUES ($1, $2, '', 200, '', $3)
         ON CONFLICT (scope, key) DO UPDATE SET created_at = EXCLUDED.created_at`,
        [PROBE_SCOPE, PROBE_KEY, now],
      );
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
  }
}
