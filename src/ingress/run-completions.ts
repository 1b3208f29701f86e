/**
 * Waiting for runs to finish, for `waitForCompletion` requests (docs/callers.md).
 *
 * Two ways to learn that a run finished, used together:
 * - the worker of this process calls `notify(runId)` once it recorded the run,
 *   so a run executed here answers its waiting request at once;
 * - every waiting request also reads its runs from the store every `pollMs`
 *   (500 ms), because on PostgreSQL the run may execute on another replica.
 *
 * Polling, not LISTEN, for the second: a read by primary key per waiting request
 * every half second costs the database little, it needs no connection of its own
 * nor any change to how runs complete, and it cannot miss a completion the way a
 * notification lost with its connection can. The price is up to 500 ms of extra
 * wait for a run finished by another replica.
 */
import type { RunView, Store } from '../store/types.js';

export const WAIT_POLL_MS = 500;

const FINISHED = new Set(['succeeded', 'failed', 'timed_out']);
export const isFinished = (view: RunView | undefined): boolean =>
  view === undefined || FINISHED.has(view.status);

export class RunCompletions {
  private readonly listeners = new Map<string, Set<() => void>>();
  /** Every wait in progress, ended at once by `close`. */
  private readonly waits = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly store: Pick<Store, 'getRun'>,
    private readonly pollMs = WAIT_POLL_MS,
  ) {}

  /** This process recorded `runId` as finished. */
  notify(runId: string): void {
    const listeners = this.listeners.get(runId);
    if (listeners) for (const listener of listeners) listener();
  }

  /** The gateway stops: every wait answers now with what it has, and new ones do not wait. */
  close(): void {
    this.closed = true;
    for (const end of this.waits) end();
  }

  /**
   * The runs' views once all have finished, `deadline` (ms since the epoch) has
   * passed, the gateway stops or `signal` aborts (the client left), whichever
   * comes first (undefined for a run that is not found). Only the first read
   * may fail (the store is unavailable); a later failed read keeps the views
   * read before.
   */
  async wait(
    runIds: readonly string[],
    deadline: number,
    signal: AbortSignal,
  ): Promise<(RunView | undefined)[]> {
    let views = await this.read(runIds);
    while (!views.every(isFinished) && !this.closed && !signal.aborted && Date.now() < deadline) {
      const pending = runIds.filter((_, index) => !isFinished(views[index]));
      await this.change(pending, deadline, signal);
      const previous = views;
      views = await this.read(runIds).catch(() => previous);
    }
    return views;
  }

  private read(runIds: readonly string[]): Promise<(RunView | undefined)[]> {
    return Promise.all(runIds.map((runId) => this.store.getRun(runId)));
  }

  /** Resolves on a notification for one of `runIds`, the next poll, the deadline, an abort or close. */
  private change(runIds: readonly string[], deadline: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(end, Math.max(0, Math.min(this.pollMs, deadline - Date.now())));
      const listeners = this.listeners;
      const waits = this.waits;
      signal.addEventListener('abort', end, { once: true });
      waits.add(end);
      for (const runId of runIds) {
        let set = listeners.get(runId);
        if (set === undefined) {
          set = new Set();
          listeners.set(runId, set);
        }
        set.add(end);
      }
      function end(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', end);
        waits.delete(end);
        for (const runId of runIds) {
          const set = listeners.get(runId);
          set?.delete(end);
          if (set?.size === 0) listeners.delete(runId);
        }
        resolve();
      }
    });
  }
}
