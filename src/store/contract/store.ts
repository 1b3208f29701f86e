/**
 * The store as a whole (docs/architecture.md, "The store's parts"): its parts, what the
 * ingress needs beside them, and the housekeeping. Methods are async so that a
 * networked driver can implement the same interface.
 */
import type { AdminStore } from './admin.js';
import type { BudgetStore } from './budgets.js';
import type { CallbackOutboxStore } from './callbacks.js';
import type { CommittedSignal } from './committed.js';
import type {
  AcceptResult,
  Action,
  Committed,
  EventView,
  IdempotencyClaim,
  ListEventsOptions,
  RunView,
  StoredAnswer,
} from './ingress.js';
import type { DeliveryOutboxStore } from './outbox.js';
import type { ReplicaStore } from './replicas.js';
import type { RunQueueStore } from './runs.js';
import type { SessionStore } from './sessions.js';
import type { RunStepsStore } from './steps.js';

/**
 * A store is a set of parts, one per concern (docs/architecture.md, "The store's
 * parts"): each driver implements every part; callers take the part they use.
 */
export interface Store {
  /** The run queue: claims, leases, completions. */
  readonly runs: RunQueueStore;
  /** Transcripts, pending events, heartbeats, last routes. */
  readonly sessions: SessionStore;
  /** Replies waiting to be delivered. */
  readonly outbox: DeliveryOutboxStore;
  /** Completion callbacks waiting to be sent. */
  readonly callbacks: CallbackOutboxStore;
  /** What the operators' API reads and does, and the store's health. */
  readonly admin: AdminStore;
  /** What the replicas on one store share: streamed runs' pieces, the lockout ledger. */
  readonly replicas: ReplicaStore;
  /** Each run's loop steps, and the runs waiting for an operator's decision on a tool call. */
  readonly steps: RunStepsStore;
  /** Budgets' spend per scope and window, and their alerts (docs/budgets.md). */
  readonly budgets: BudgetStore;
  accept(
    actions: Action[],
    render: (committed: Committed[]) => StoredAnswer,
    idempotency?: IdempotencyClaim,
  ): Promise<AcceptResult>;
  getRun(runId: string): Promise<RunView | undefined>;
  /**
   * Which of `runIds` are still queued or running, in one read whatever their number (the
   * streams' shared safety poll: ingress/run-completions.ts); a run not found is not among them.
   */
  unfinishedRuns(runIds: readonly string[]): Promise<Set<string>>;
  /** Oldest first; `undefined` when `after` names no event of that session. */
  listEvents(sessionKey: string, options: ListEventsOptions): Promise<EventView[] | undefined>;
  /** Marks these pending events of a session consumed (a heartbeat turn saw them); returns how many changed. */
  consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): Promise<number>;
  /** How much work stands in the store now, for every replica together (the metrics' gauges). */
  counts(): Promise<StoreCounts>;
  pruneIdempotency(olderThan: number): Promise<number>;
  /**
   * One batch of retention (store/retention-rules.ts says what is prunable), in
   * one short transaction: up to `limit` rows of `kind` last touched before
   * `olderThan` (ms since the epoch) are deleted with what belongs only to them.
   */
  pruneBatch(kind: PruneKind, olderThan: number, limit: number): Promise<PruneBatch>;
  /** Work of a kind was committed here, or on another replica (committed.ts). */
  readonly committed: CommittedSignal;
  close(): Promise<void>;
}

/** What a retention batch prunes: finished runs (and old transcript entries), or consumed events (and finished heartbeats). */
export type PruneKind = 'runs' | 'events';

export interface PruneBatch {
  /** Runs or events deleted (what `agentgate_store_pruned_total{kind}` counts). */
  deleted: number;
  /** Whether another batch may find more to delete now (some part of this one was full). */
  more: boolean;
}

/** Work standing in the store (`Store.counts`). */
export interface StoreCounts {
  /** Runs with status `queued`. */
  runsQueued: number;
  /** Runs with status `running` (a lease expired by a dead replica included, until it is taken over). */
  runsRunning: number;
  /** Outbox items (replies) still to be delivered. */
  deliveriesPending: number;
}

/** The store cannot take the write now (locked, disk full, I/O error); nothing was written. */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`store unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}
