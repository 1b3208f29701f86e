/** The store's completion callbacks part (docs/callers.md, "Completion callbacks"): their durable outbox. */
import type { AlertOutcome, NewAlert } from './alerts.js';

/**
 * A completion callback in its outbox (docs/callers.md, "What is sent"). The row is written with
 * the run at its acceptance and becomes due once the run's result is final:
 * at completion when nothing is to be delivered, else when the delivery
 * settles (delivered, failed or skipped), so the body's `delivery` is final.
 */
export interface CallbackItem {
  /** The `webhook-id`: the same on every attempt. */
  id: string;
  runId: string;
  url: string;
  /** HTTP attempts made so far. */
  attempts: number;
  /** When the callback became due (ms since the epoch); retries are counted from here. */
  armedAt: number;
  nextAttemptAt: number;
  /** The body, fixed at the first attempt so every retry sends the same bytes; null before it. */
  body: string | null;
  /** The span of the run it reports on, to continue (docs/tracing.md); null for none. */
  traceParent: string | null;
}

/** The outcome of one attempt, recorded on the callback and on its run's RunView. */
export interface CallbackAttempt {
  /** HTTP attempts so far, this one included. */
  attempts: number;
  body: string;
  /** Why the attempt failed (null when delivered). */
  error: string | null;
  now: number;
}

export interface CallbackOutboxStore {
  /**
   * Leases up to `limit` callbacks that are due at `now` to `owner` until
   * `now + leaseMs`, earliest first; a callback leased by another live owner is
   * skipped, so one replica sends each attempt. (SQLite, one process per file:
   * another owner's lease is a previous process's and is taken over at once.)
   */
  claimCallbacks(owner: string, now: number, leaseMs: number, limit: number): Promise<CallbackItem[]>;
  /** A failed attempt to retry at `nextAttemptAt`; releases the lease. False when `owner` lost it. */
  retryCallback(
    item: CallbackItem,
    owner: string,
    attempt: CallbackAttempt & { nextAttemptAt: number },
  ): Promise<boolean>;
  /**
   * Ends a callback as delivered or failed; with `alert` (docs/alerts.md), enqueues it in the same
   * transaction. False when `owner` lost the lease (nothing written); true when recorded, or,
   * with an alert, what became of it (`queued` or `suppressed`).
   */
  finishCallback(
    item: CallbackItem,
    owner: string,
    attempt: CallbackAttempt & { status: 'delivered' | 'failed'; alert?: NewAlert },
  ): Promise<boolean | AlertOutcome>;
}
