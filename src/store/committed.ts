/**
 * The store's `committed(kind)` signal as one process keeps it, and joined with the
 * other replicas' commits (docs/architecture.md, "Background loops"); the signal's
 * types are part of the store contract (contract/committed.ts).
 */
import type { CommittedListener, CommittedSignal, WorkKind } from './contract/committed.js';

export type { CommittedListener, CommittedSignal, WorkKind } from './contract/committed.js';

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
