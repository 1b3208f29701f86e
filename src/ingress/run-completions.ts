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
 *
 * Streams (`whenFinished`) may be open by the hundreds for minutes, so they do not poll
 * each: they wait for the signal alone — this process's worker, or, for a streamed run
 * executed on another replica, that replica's notice (streaming/run-deltas.ts) — and one
 * safety poll shared by all of them reads every run they wait on in one query every
 * `safetyPollMs` (5 s), for a notice lost on its way (docs/callers.md, "Streamed answers").
 */
import { setMaxListeners } from 'node:events';
import { ScanLoop } from '../loops/scan-loop.js';
import type { RunView, Store } from '../store/types.js';
import { systemClock } from '../util/clock.js';

export const WAIT_POLL_MS = 500;
/** The streams' shared safety poll: one read for all of them, this often. */
export const STREAM_SAFETY_POLL_MS = 5000;

const FINISHED = new Set(['succeeded', 'failed', 'timed_out']);
export const isFinished = (view: RunView | undefined): boolean =>
  view === undefined || FINISHED.has(view.status);

export interface RunCompletionsOptions {
  /** Each `wait`'s own read of its runs. */
  pollMs?: number;
  /** The read shared by every `whenFinished`. */
  safetyPollMs?: number;
  /** A failed safety poll (it is tried again at the next one). */
  onPollFailed?: (error: unknown) => void;
}

export class RunCompletions {
  private readonly listeners = new Map<string, Set<() => void>>();
  /** Every wait in progress, ended at once by `close`. */
  private readonly waits = new Set<() => void>();
  /** The runs streams wait on, and how many streams wait on each (the safety poll reads them). */
  private readonly watched = new Map<string, number>();
  /** The shared safety poll (loops/scan-loop.ts), running while any stream waits. */
  private safety: ScanLoop | undefined;
  private closed = false;
  private readonly pollMs: number;
  private readonly safetyPollMs: number;
  private readonly stop = new AbortController();

  constructor(
    private readonly store: Pick<Store, 'getRun' | 'unfinishedRuns'>,
    private readonly options: RunCompletionsOptions = {},
  ) {
    // Every open stream listens to it: hundreds of listeners are expected, not a leak.
    setMaxListeners(0, this.stop.signal);
    this.pollMs = options.pollMs ?? WAIT_POLL_MS;
    this.safetyPollMs = options.safetyPollMs ?? STREAM_SAFETY_POLL_MS;
  }

  /** Aborted when the gateway stops (`close`): no wait waits any more. */
  get stopping(): AbortSignal {
    return this.stop.signal;
  }

  /** This process recorded `runId` as finished. */
  notify(runId: string): void {
    const listeners = this.listeners.get(runId);
    if (listeners) for (const listener of listeners) listener();
  }

  /** The gateway stops: every wait answers now with what it has, and new ones do not wait. */
  close(): void {
    this.closed = true;
    this.stop.abort();
    for (const end of this.waits) end();
    this.stopSafetyPoll();
  }

  /**
   * Resolves true once `runId` is known to be finished (this process's worker recorded it,
   * another replica's notice said so, or the shared safety poll read it finished), false
   * when `deadline` passed, the gateway stops or `signal` aborted first. Reads nothing of
   * its own: a stream waiting costs the store nothing.
   */
  async whenFinished(runId: string, deadline: number, signal: AbortSignal): Promise<boolean> {
    if (this.closed || signal.aborted || Date.now() >= deadline) return false;
    let finished = false;
    this.watch(runId);
    try {
      await this.change([runId], deadline, signal, () => {
        finished = true;
      });
    } finally {
      this.unwatch(runId);
    }
    return finished;
  }

  /** Reads every watched run now (the listening connection was re-opened: notices may be lost). */
  checkNow(): void {
    this.safety?.notify();
  }

  private watch(runId: string): void {
    this.watched.set(runId, (this.watched.get(runId) ?? 0) + 1);
    if (this.safety === undefined) {
      this.safety = new ScanLoop(() => this.safetyPoll(), systemClock, this.safetyPollMs, {
        scanAtStart: false,
      });
      this.safety.start();
    }
  }

  private unwatch(runId: string): void {
    const left = (this.watched.get(runId) ?? 1) - 1;
    if (left > 0) this.watched.set(runId, left);
    else this.watched.delete(runId);
    if (this.watched.size === 0) this.stopSafetyPoll();
  }

  private stopSafetyPoll(): void {
    void this.safety?.stop();
    this.safety = undefined;
  }

  /** One read for every run a stream waits on; those no longer queued or running are notified. */
  private async safetyPoll(): Promise<void> {
    if (this.watched.size === 0) return;
    try {
      const runIds = [...this.watched.keys()];
      const unfinished = await this.store.unfinishedRuns(runIds);
      for (const runId of runIds) if (!unfinished.has(runId)) this.notify(runId);
    } catch (error) {
      this.options.onPollFailed?.(error);
    }
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

  /**
   * Resolves on a notification for one of `runIds` (calling `onNotified` first), the next
   * poll (`wait`'s own, when `onNotified` is absent), the deadline, an abort or close.
   */
  private change(
    runIds: readonly string[],
    deadline: number,
    signal: AbortSignal,
    onNotified?: () => void,
  ): Promise<void> {
    return new Promise((resolve) => {
      const untilMs = Math.max(0, deadline - Date.now());
      const timer = setTimeout(end, onNotified ? untilMs : Math.min(this.pollMs, untilMs));
      const listeners = this.listeners;
      const waits = this.waits;
      const notified = onNotified
        ? () => {
            onNotified();
            end();
          }
        : end;
      signal.addEventListener('abort', end, { once: true });
      waits.add(end);
      for (const runId of runIds) {
        let set = listeners.get(runId);
        if (set === undefined) {
          set = new Set();
          listeners.set(runId, set);
        }
        set.add(notified);
      }
      function end(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', end);
        waits.delete(end);
        for (const runId of runIds) {
          const set = listeners.get(runId);
          set?.delete(notified);
          if (set?.size === 0) listeners.delete(runId);
        }
        resolve();
      }
    });
  }
}
