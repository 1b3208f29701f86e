/**
 * The operators' reads and writes on SQLite (docs/operating.md, "Admin API"): run, delivery and
 * callback lists newest first, a run's inputs for a retry, a redelivery, a ping and the
 * readiness probe's write.
 *
 * Lists walk an index newest first by seq and stop at the page size: no filter
 * means the primary key; `status` of an active run the partial index
 * runs_active_by_session (read whole and sorted: it holds the active runs only), of a
 * failed run runs_failed; `source` runs_by_source; `token` runs_by_token. A status
 * is written into the SQL as a literal (it comes from a closed set), because
 * SQLite uses a partial index only when the query's own text implies its WHERE.
 *
 * A bulk retry's runs are read by status and finish time through runs_retryable, each
 * checked for a retry of it through runs_by_retry_of (docs/operating.md, "Bulk retry").
 */

import type Database from 'better-sqlite3';
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
  type RunStatus,
  type RunSummaryView,
  type StoredRun,
  StoreUnavailableError,
  type UsageGroup,
  type UsageSummaryOptions,
} from '../types.js';
import { BOUND_LIMIT } from './bound-limit.js';
import { lowDiskRoom } from './disk-room.js';

/**
 * The WHERE term of a status filter, in the form that lets SQLite use the
 * partial index for it: runs_active_by_session's own `IN` term for an active status.
 */
function statusTerm(status: RunStatus): string {
  if (status === 'queued' || status === 'running')
    return `status IN ('queued', 'running') AND status = '${status}'`;
  return `status = '${status}'`;
}

/**
 * The run list's query: parameters `before` seq, then the source when `bySource`, the token id
 * when `byToken`, then the row limit. `columns`: the whole RunViews, or their summaries.
 */
export function runListSql(
  status: RunStatus | undefined,
  bySource: boolean,
  byToken = false,
  columns = RUN_LIST_COLUMNS,
): string {
  if (status !== undefined && !RUN_STATUSES.includes(status)) throw new Error(`unknown run status ${status}`);
  const where = ['seq < ?'];
  if (status !== undefined) where.push(statusTerm(status));
  if (bySource) where.push('source = ?');
  // `token_id = ?` implies runs_by_token's `token_id IS NOT NULL`: SQLite sees that on its own.
  if (byToken) where.push('token_id = ?');
  // The planner would rather walk the primary key than sort, which reads every finished run
  // when few are active: the active runs' own index is read whole instead.
  const from =
    status === 'queued' || status === 'running' ? 'runs INDEXED BY runs_active_by_session' : 'runs';
  return `SELECT ${columns} FROM ${from} WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ${BOUND_LIMIT}`;
}

/**
 * The WHERE of a bulk retry's runs (runs `r`): parameters `since`, `until`, then the source when
 * `bySource`. The status goes in as runs_retryable's own `IN` term and its literal, as for the list.
 */
function retryableWhere(status: RetryableRunsOptions['status'], bySource: boolean): string {
  if (status !== 'failed' && status !== 'timed_out') throw new Error(`not a retryable status: ${status}`);
  const where = [
    `r.status IN ('failed', 'timed_out') AND r.status = '${status}'`,
    'r.finished_at >= ? AND r.finished_at < ?',
  ];
  if (bySource) where.push('r.source = ?');
  where.push('NOT EXISTS (SELECT 1 FROM runs x WHERE x.retry_of = r.id)');
  return where.join(' AND ');
}

/** A bulk retry's runs, oldest finished first: the WHERE's parameters, then the row limit. */
export function retryableSql(status: RetryableRunsOptions['status'], bySource: boolean): string {
  return `SELECT r.*, c.url AS callback_url FROM runs r LEFT JOIN callbacks c ON c.run_id = r.id
   WHERE ${retryableWhere(status, bySource)} ORDER BY r.finished_at, r.seq LIMIT ${BOUND_LIMIT}`;
}

/** How many runs a bulk retry matches: the WHERE's parameters. */
export function retryableCountSql(status: RetryableRunsOptions['status'], bySource: boolean): string {
  return `SELECT count(*) AS n FROM runs r WHERE ${retryableWhere(status, bySource)}`;
}

const NOT_ALERTS = `kind <> 'alert'`;

/**
 * The delivery list's query: parameters the run id when `byRun`, then the row limit. By run, it
 * reads that run's rows through deliveries_by_ref: a row holds its reply's text, which a scan
 * of many rows would step through on SQLite (docs/operating.md, "The run list's summary view").
 */
export function deliveryListSql(status: DeliveryView['status'] | undefined, byRun = false): string {
  const statuses = status === undefined ? undefined : DELIVERY_STATUSES_OF[status];
  if (status !== undefined && !statuses) throw new Error(`unknown delivery status ${status}`);
  // One status reads as `=`, the form of deliveries_due's WHERE; several as deliveries_failed's IN.
  // Replies only: alert messages (docs/alerts.md) are not replies to redeliver.
  const where = [NOT_ALERTS];
  if (statuses?.length === 1) where.unshift(`status = '${statuses[0]}'`);
  else if (statuses) where.unshift(`status IN (${statuses.map((s) => `'${s}'`).join(', ')})`);
  if (byRun) where.push(`ref_id = ? AND kind = 'run'`);
  const from = byRun ? 'deliveries INDEXED BY deliveries_by_ref' : 'deliveries';
  return `SELECT ${DELIVERY_LIST_COLUMNS} FROM ${from} WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ${BOUND_LIMIT}`;
}

export class SqliteAdmin implements AdminStore {
  private readonly s;
  /** One prepared statement per filter combination, made on first use. */
  private readonly listStatements = new Map<string, Database.Statement<unknown[], unknown>>();

  constructor(
    private readonly db: Database.Database,
    /** Told of each commit that can make work due, once it has committed (commit-signals.ts). */
    private readonly signals: CommitSignals,
    /** The database file, whose disk the readiness probe checks for room. */
    private readonly path = ':memory:',
  ) {
    this.s = {
      runSeq: db.prepare<[string], { seq: number }>('SELECT seq FROM runs WHERE id = ?'),
      attachment: db.prepare<[string, number], AttachmentRow>(
        `SELECT ${ATTACHMENT_COLUMNS} FROM run_attachments WHERE run_id = ? AND idx = ?`,
      ),
      storedRun: db.prepare<[string], StoredRunRow>(
        // The callback's URL lives with its outbox row (callbacks.run_id).
        `SELECT r.*, c.url AS callback_url FROM runs r LEFT JOIN callbacks c ON c.run_id = r.id WHERE r.id = ?`,
      ),
      redeliverRun: db.prepare<[string], RedeliverRunRow>(
        `SELECT ${REDELIVER_RUN_COLUMNS} FROM runs WHERE id = ?`,
      ),
      lastDelivery: db.prepare<[string], LastDeliveryRow>(
        `SELECT channel, recipient, resolved_channel, resolved_to, status FROM deliveries
          WHERE ref_id = ? AND kind = 'run' ORDER BY seq DESC LIMIT 1`,
      ),
      insertDelivery: db.prepare(
        `INSERT INTO deliveries (${REDELIVERY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      runDeliveryPending: db.prepare(
        `UPDATE runs SET delivery_status = 'pending', delivery_channel = ?, delivery_to = ?, delivery_reason = NULL
          WHERE id = ?`,
      ),
      ping: db.prepare('SELECT 1'),
      probeCommit: db.prepare<[string, string, number]>(
        `INSERT INTO idempotency (scope, key, body_hash, status, body, created_at) VALUES (?, ?, '', 200, '', ?)
         ON CONFLICT (scope, key) DO UPDATE SET created_at = excluded.created_at`,
      ),
    };
  }

  async usageSummary(options: UsageSummaryOptions): Promise<UsageGroup[]> {
    const name = `usage:${options.by}:${options.bucket ?? ''}`;
    let statement = this.listStatements.get(name);
    if (!statement) {
      statement = this.db.prepare(usageSummarySql(options.by, () => '?', options.bucket));
      this.listStatements.set(name, statement);
    }
    return (statement.all(...usageSummaryValues(options)) as UsageGroupRow[]).map(toUsageGroup);
  }

  async listRuns(options: ListRunsOptions): Promise<RunPage | undefined> {
    return this.runPage(options, 'runs', RUN_LIST_COLUMNS, (row: RunListRow) => toRunListView(row));
  }

  async listRunSummaries(options: ListRunsOptions): Promise<RunPage<RunSummaryView> | undefined> {
    return this.runPage(options, 'summaries', RUN_SUMMARY_COLUMNS, (row: RunSummaryRow) =>
      toRunSummaryView(row),
    );
  }

  /** A page of the run list, each row read with `columns` (named `view` in the statement cache). */
  private runPage<Row, View extends { runId: string }>(
    options: ListRunsOptions,
    view: string,
    columns: string,
    toView: (row: Row) => View,
  ): RunPage<View> | undefined {
    let beforeSeq = NEWEST;
    if (options.before !== undefined) {
      const found = this.s.runSeq.get(options.before);
      if (!found) return undefined;
      beforeSeq = found.seq;
    }
    const { status, source, token } = options;
    if (status !== undefined && !RUN_STATUSES.includes(status))
      throw new Error(`unknown run status ${status}`);
    const key = `${view}|${status ?? ''}|${source === undefined ? '' : 's'}|${token === undefined ? '' : 't'}`;
    const statement = this.statement(key, () =>
      runListSql(status, source !== undefined, token !== undefined, columns),
    );
    const params: unknown[] = [beforeSeq];
    if (source !== undefined) params.push(source);
    if (token !== undefined) params.push(token);
    params.push(options.limit + 1);
    const rows = statement.all(...params) as Row[];
    const more = rows.length > options.limit;
    const runs = rows.slice(0, options.limit).map(toView);
    return { runs, next: more ? (runs[runs.length - 1]?.runId ?? null) : null };
  }

  async getAttachment(runId: string, index: number): Promise<Attachment | undefined> {
    const row = this.s.attachment.get(runId, index);
    return row ? toAttachment(row) : undefined;
  }

  async getStoredRun(runId: string): Promise<StoredRun | undefined> {
    const row = this.s.storedRun.get(runId);
    return row ? toStoredRun(row) : undefined;
  }

  async listRetryableRuns(options: RetryableRunsOptions): Promise<RetryableRuns> {
    const { status, source } = options;
    const bySource = source !== undefined;
    const key = `retryable|${status}|${bySource ? 's' : ''}`;
    const list = this.statement(key, () => retryableSql(status, bySource));
    const count = this.statement(`${key}|count`, () => retryableCountSql(status, bySource));
    const params: unknown[] = [options.since ?? Number.MIN_SAFE_INTEGER, options.until ?? NEWEST];
    if (bySource) params.push(source);
    // One read transaction, so the count and the rows see the same runs.
    const read = this.db.transaction(() => ({
      matched: (count.get(...params) as { n: number }).n,
      runs: (list.all(...params, options.limit) as StoredRunRow[]).map(toStoredRun),
    }));
    return read.deferred();
  }

  /** A statement of `listStatements`, prepared on first use. */
  private statement(key: string, sql: () => string): Database.Statement<unknown[], unknown> {
    let statement = this.listStatements.get(key);
    if (!statement) {
      statement = this.db.prepare(sql());
      this.listStatements.set(key, statement);
    }
    return statement;
  }

  async redeliverRun(runId: string, now: number): Promise<RedeliverResult> {
    const redeliver = this.db.transaction((): RedeliverResult => {
      const run = this.s.redeliverRun.get(runId);
      const last = mayRedeliver(run) ? this.s.lastDelivery.get(runId) : undefined;
      const plan = planRedelivery(runId, run, last, now);
      if (plan.result !== 'enqueued') return plan.result;
      this.s.insertDelivery.run(plan.delivery);
      this.s.runDeliveryPending.run(plan.channel, plan.to, runId);
      return 'enqueued';
    });
    const result = redeliver.immediate();
    this.signals.redelivered(result);
    return result;
  }

  async listDeliveries(options: ListDeliveriesOptions): Promise<DeliveryView[]> {
    const { status, runId } = options;
    const byRun = runId !== undefined;
    const statement = this.statement(`deliveries|${status ?? ''}|${byRun ? 'r' : ''}`, () =>
      deliveryListSql(status, byRun),
    );
    const params = byRun ? [runId, options.limit] : [options.limit];
    return (statement.all(...params) as DeliveryListRow[]).map(toDeliveryView);
  }

  async listCallbacks(options: ListCallbacksOptions): Promise<CallbackView[]> {
    const key = `callbacks|${options.status ?? ''}`;
    let statement = this.listStatements.get(key);
    if (!statement) {
      statement = this.db.prepare(
        `SELECT ${CALLBACK_LIST_COLUMNS} FROM callbacks ${callbackStatusWhere(options.status)}
          ORDER BY seq DESC LIMIT ${BOUND_LIMIT}`,
      );
      this.listStatements.set(key, statement);
    }
    return (statement.all(options.limit) as CallbackListRow[]).map(toCallbackView);
  }

  async ping(): Promise<void> {
    try {
      this.s.ping.get();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
  }

  async probeCommit(now: number): Promise<void> {
    const low = lowDiskRoom(this.path);
    if (low !== undefined) throw new StoreUnavailableError(new Error(low));
    try {
      // Its own implicit transaction: the commit appends to the WAL, which needs disk space.
      this.s.probeCommit.run(PROBE_SCOPE, PROBE_KEY, now);
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
  }
}
