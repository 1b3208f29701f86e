/**
 * The store's `committed(kind)` signal (docs/architecture.md, "Background loops"):
 * once the store has committed work of a kind, it tells the loops that work
 * through that kind, so they look now rather than at their next poll. A signal
 * is a hint, never the work itself: a loop reads what is due from the store,
 * and its poll stays the safety net for a signal that never came.
 *
 * Local on every engine (this process's commits); on PostgreSQL `runs` also
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
  | 'events';

/**
 * Called after a commit of its kind. `keys`: the main session keys it concerns
 * where the kind has them (`events`); absent, it may concern any.
 */
export type CommittedListener = (keys?: readonly string[]) => void;

export interface CommittedSignal {
  /** Calls `listener` after each commit of `kind`; returns the unsubscribe. */
  on(kind: WorkKind, listener: CommittedListener): () => void;
}

/** The signal of one process's commits; the store calls `emit` once a commit of a kind is durable. */
export class LocalCommits implements CommittedSignal {
  private readonly listeners = new Map<WorkKind, Set<CommittedListener>>();

  on(kind: WorkKind, listener: CommittedListener): () => void {
    let set = this.listeners.get(kind);
    if (!set) {
      set = new Set();
      this.listeners.set(kind, set);
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  emit(kind: WorkKind, keys?: readonly string[]): void {
    for (const listener of [...(this.listeners.get(kind) ?? [])]) {
      // A listener is a loop's wake-up: it must not turn a committed write into a failed call.
      try {
        listener(keys);
      } catch {}
    }
  }
}

/**
 * The local signal plus a source of the other replicas' commits (`remote`, which
 * returns its own unsubscribe, or nothing for a kind it does not carry).
 */
export function withRemote(
  local: LocalCommits,
  remote: (kind: WorkKind, listener: CommittedListener) => (() => void) | undefined,
): CommittedSignal {
  return {
    on(kind, listener) {
      const offLocal = local.on(kind, listener);
      const offRemote = remote(kind, listener);
      return () => {
        offLocal();
        offRemote?.();
      };
    },
  };
}
