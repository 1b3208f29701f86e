/**
 * The store's `committed(kind)` signal (docs/architecture.md, "Background loops"):
 * once the store has committed work of a kind, it tells the loops that work
 * through that kind, so they look now rather than at their next poll. A signal
 * is a hint, never the work itself: a loop reads what is due from the store,
 * and its poll stays the safety net for a signal that never came.
 *
 * Local on every driver (this process's commits); on PostgreSQL `runs` also
 * comes from the other replicas' commits (LISTEN/NOTIFY, postgres/work-listener.ts).
 */

/** The kinds of work a commit can make due, each worked through by its own loop. */
export type WorkKind =
  /** Runs queued or claimable again (the run worker). */
  | 'runs'
  /** A delivery due in the outbox: a reply, a heartbeat's reply, an alert (the delivery engine). */
  | 'outbox'
  /** A completion callback that may be due: its run finished, or its delivery settled (the callback engine). */
  | 'callbacks'
  /** Pending events asking for a heartbeat now (`wakeMode: "now"`; the heartbeat scheduler). */
  | 'events'
  /** Spend added to a budget's counters: a run's completion, a heartbeat (the budget book: docs/budgets.md). */
  | 'spend';

/**
 * Called after a commit of its kind. `keys`: the main session keys it concerns
 * where the kind has them (`events`); absent, it may concern any.
 */
export type CommittedListener = (keys?: readonly string[]) => void;

export interface CommittedSignal {
  /** Calls `listener` after each commit of `kind`; returns the unsubscribe. */
  on(kind: WorkKind, listener: CommittedListener): () => void;
}
