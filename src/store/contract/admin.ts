/** The store's admin part: what the operators' API reads and does (docs/operating.md, "Admin API"). */
import type { RunView } from './ingress.js';
import type { UsageGroup, UsageSummaryOptions } from './usage.js';
import type { Attachment, AttachmentInfo, NewRun, RunStatus } from './values.js';

/** A run as the run list shows it (docs/operating.md, "Admin API"): its RunView plus where it came from. */
export interface RunListView extends RunView {
  /** `hook:agent`, `hook:<mapping id>`, ... (a retry keeps its original's). */
  source: string;
  name: string | null;
  retryOf: string | null;
}

/**
 * A run as the run list's summary view shows it (docs/operating.md, "The run list's summary
 * view"): the list's fields, with the first line of the reply and of the error in place of the
 * texts themselves (`GET /api/runs/{id}` has them whole).
 */
export interface RunSummaryView extends Omit<RunListView, 'reply' | 'error'> {
  replyExcerpt: string | null;
  errorExcerpt: string | null;
}

export interface ListRunsOptions {
  status?: RunStatus;
  source?: string;
  /** Only runs accepted with this hook token id (docs/senders.md). */
  token?: string;
  /** Only runs accepted strictly before this run (paging). */
  before?: string;
  limit: number;
}

/** A page of the run list, newest first; `next` is the `before` of the next page, null on the last. */
export interface RunPage<View = RunListView> {
  runs: View[];
  next: string | null;
}

/**
 * A run's inputs as accepted, and where it stands: what a retry copies — all but `tokenId`, which
 * a retry sets to null (a retry is the operator's, not the sender's: docs/senders.md).
 */
export interface StoredRun {
  run: NewRun;
  status: RunStatus;
  /** The run's files without their bytes (empty for none); a retry copies them. */
  attachments: AttachmentInfo[];
}

/**
 * Which finished runs a bulk retry takes (docs/operating.md, "Bulk retry"): runs with this status,
 * of this source when given, that finished at or after `since` and strictly before `until` (ms
 * since the epoch), and that no run retries yet (no run's `retryOf` names them).
 */
export interface RetryableRunsOptions {
  status: 'failed' | 'timed_out';
  source?: string;
  since?: number;
  until?: number;
  /** At most this many runs are returned; `matched` counts them all. */
  limit: number;
}

/** The runs a bulk retry takes: the oldest `limit` first (by when they finished), and how many match in all. */
export interface RetryableRuns {
  matched: number;
  runs: StoredRun[];
}

/** An outbox item as the admin API shows it (`GET /api/deliveries`). */
export interface DeliveryView {
  id: string;
  /** The run whose reply this is; null for a heartbeat's reply (see `heartbeatId`). */
  runId: string | null;
  heartbeatId: string | null;
  /** Where it went once fixed; before that, as requested (`last`, and `to` null, possibly). */
  channel: string;
  to: string | null;
  status: 'pending' | 'delivered' | 'failed';
  /** Sending attempts so far, the last one included. */
  attempts: number;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ListDeliveriesOptions {
  status?: DeliveryView['status'];
  /** Only the deliveries of this run's reply (the run's page: docs/operating.md, "Admin API"). */
  runId?: string;
  limit: number;
}

/**
 * A completion callback as the admin API shows it (`GET /api/callbacks`). Only the URL's
 * origin: a caller's path or query may carry its own secret (docs/callers.md).
 */
export interface CallbackView {
  /** The `webhook-id` every attempt carried. */
  id: string;
  runId: string;
  /** `scheme://host[:port]` of the callback URL. */
  origin: string;
  /** `pending` from the run's acceptance until the callback ends, as on the RunView. */
  status: 'pending' | 'delivered' | 'failed';
  /** HTTP attempts so far. */
  attempts: number;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ListCallbacksOptions {
  status?: CallbackView['status'];
  limit: number;
}

/** What `redeliverRun` did. */
export type RedeliverResult = 'enqueued' | 'not_found' | 'nothing_to_deliver' | 'delivery_pending';

/** What the operators' API reads and does beyond the ingress (docs/operating.md, "Admin API"). */
export interface AdminStore {
  /** Newest first; `undefined` when `before` names no run. */
  listRuns(options: ListRunsOptions): Promise<RunPage | undefined>;
  /** The same page as `listRuns`, each run as its summary: no reply or error is read whole. */
  listRunSummaries(options: ListRunsOptions): Promise<RunPage<RunSummaryView> | undefined>;
  getStoredRun(runId: string): Promise<StoredRun | undefined>;
  /** One of a run's files with its bytes (`index` from 0, as the RunView lists them); undefined when none. */
  getAttachment(runId: string, index: number): Promise<Attachment | undefined>;
  /**
   * The finished runs a bulk retry would retry (`POST /api/runs/retry`), oldest first by
   * `finishedAt` (then by acceptance), with their inputs as `getStoredRun` reads them. Reads only:
   * the retries are committed through `accept`.
   */
  listRetryableRuns(options: RetryableRunsOptions): Promise<RetryableRuns>;
  /**
   * Puts a finished run's reply in the outbox again, to the route its last
   * delivery took, and sets its delivery record back to pending — in one transaction.
   */
  redeliverRun(runId: string, now: number): Promise<RedeliverResult>;
  /** Outbox items, newest first. */
  listDeliveries(options: ListDeliveriesOptions): Promise<DeliveryView[]>;
  /** Completion callbacks, newest first (read only: no admin action sends one again). */
  listCallbacks(options: ListCallbacksOptions): Promise<CallbackView[]>;
  /**
   * The usage of the runs that finished in `[since, until)`, summed per group (`GET /api/usage`,
   * docs/usage.md), the costliest first; a group's `costUsd` sums its priced runs, null when none was.
   */
  usageSummary(options: UsageSummaryOptions): Promise<UsageGroup[]>;
  /** A cheap round trip to the store; throws StoreUnavailableError when it does not answer. */
  ping(): Promise<void>;
  /**
   * Commits one tiny write (`/readyz`'s probe: one idempotency row of its own,
   * rewritten in place); throws StoreUnavailableError when the store cannot commit.
   */
  probeCommit(now: number): Promise<void>;
}
