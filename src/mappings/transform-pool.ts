/**
 * A small pool of long-lived worker threads for one transform module. Calls
 * wait in one FIFO queue and go to whichever worker is free, so a worker stuck
 * in a runaway call holds up only that call: the others keep serving the
 * queue, and the stuck one is terminated at its deadline and replaced.
 *
 * Deadlines: a call has `timeoutMs` from the moment a worker takes it, and may
 * wait at most `queueTimeoutMs` for a worker before that; both fail as
 * TransformTimeoutError (500 mapping_failed), so a request is answered within
 * queueTimeoutMs + timeoutMs whatever the transform does.
 */
import { availableParallelism } from 'node:os';
import type { ResourceLimits } from 'node:worker_threads';
import {
  type TransformAction,
  TransformError,
  type TransformInput,
  TransformTimeoutError,
} from './transform-action.js';
import type { WorkerSpec } from './transform-protocol.js';
import { type PendingCall, TransformSlot } from './transform-slot.js';

/** CONTRACT §7 / README: a transform call that has not settled after this is cut off. */
export const TRANSFORM_TIMEOUT_MS = 5000;

export interface TransformLimits {
  /** Per call, from the moment a worker takes it. */
  timeoutMs: number;
  /** Longest a call waits in the queue for a free worker. */
  queueTimeoutMs: number;
  /** Calls that may wait at once; one more fails at once instead of piling up. */
  maxQueued: number;
  /** Worker threads per transform, started on demand (one at load). */
  workers: number;
  /** Time a new worker has to import the module (tsx compiles TypeScript here). */
  loadTimeoutMs: number;
  /** V8 limits of each worker: a heap bomb ends the worker, not the gateway. */
  resourceLimits: ResourceLimits;
}

export const DEFAULT_TRANSFORM_LIMITS: Readonly<TransformLimits> = Object.freeze({
  timeoutMs: TRANSFORM_TIMEOUT_MS,
  queueTimeoutMs: TRANSFORM_TIMEOUT_MS,
  maxQueued: 1000,
  workers: Math.max(1, Math.min(2, availableParallelism())),
  loadTimeoutMs: 10_000,
  resourceLimits: Object.freeze({
    maxOldGenerationSizeMb: 128,
    maxYoungGenerationSizeMb: 16,
    stackSizeMb: 4,
  }),
});

interface QueuedCall extends PendingCall {
  queueTimer: NodeJS.Timeout;
}

export class TransformPool {
  private readonly slots = new Set<TransformSlot>();
  private readonly queue: QueuedCall[] = [];
  /** Reload: serve what still comes, but let every worker end as soon as it is idle. */
  private retired = false;
  /** Shutdown: refuse everything. */
  private terminated = false;
  /** A worker started to add capacity failed to load (the file changed?): stop adding more. */
  private growthFailed = false;
  private allGone: (() => void) | undefined;

  private constructor(
    private readonly spec: WorkerSpec,
    private readonly limits: TransformLimits,
  ) {}

  /** Starts the first worker and waits for it to load the module; a TransformError when it cannot. */
  static async start(spec: WorkerSpec, limits: Partial<TransformLimits> = {}): Promise<TransformPool> {
    const pool = new TransformPool(spec, { ...DEFAULT_TRANSFORM_LIMITS, ...limits });
    await pool.spawn().loaded;
    return pool;
  }

  /** Runs the transform on `input` in a worker; the validated action, or null to skip. */
  run(input: TransformInput): Promise<TransformAction | null> {
    if (this.terminated) return Promise.reject(new TransformError(`${this.label}: the gateway is stopping`));
    if (this.queue.length >= this.limits.maxQueued) {
      return Promise.reject(
        new TransformError(`${this.label}: ${this.limits.maxQueued} calls are already waiting for a worker`),
      );
    }
    return new Promise((resolve, reject) => {
      const call: QueuedCall = {
        input,
        resolve,
        reject,
        queueTimer: setTimeout(() => {
          const at = this.queue.indexOf(call);
          if (at >= 0) this.queue.splice(at, 1);
          reject(
            new TransformTimeoutError(
              `${this.label}: no worker was free within ${this.limits.queueTimeoutMs} ms`,
            ),
          );
        }, this.limits.queueTimeoutMs),
      };
      this.queue.push(call);
      this.pump();
    });
  }

  /**
   * For a config reload: workers end as soon as they are idle. A request that
   * began under the old config and arrives late is still served (by a worker
   * that then ends too). Resolves when no worker is left.
   */
  retire(): Promise<void> {
    this.retired = true;
    this.pump();
    return this.whenEmpty();
  }

  /** For shutdown: waiting and running calls fail, every worker is terminated. */
  async terminate(): Promise<void> {
    this.terminated = true;
    this.rejectQueue(new TransformError(`${this.label}: the gateway is stopping`));
    await Promise.all([...this.slots].map((slot) => slot.stop()));
    await this.whenEmpty();
  }

  /** Worker threads alive now (loading, idle or busy). */
  get size(): number {
    return this.slots.size;
  }

  private get label(): string {
    return `transform "${this.spec.module}"`;
  }

  private spawn(): TransformSlot {
    const slot = new TransformSlot(this.spec, this.limits, {
      free: () => this.pump(),
      gone: (gone) => this.onGone(gone),
    });
    this.slots.add(slot);
    return slot;
  }

  /** Hands waiting calls to idle workers, starts workers the queue needs, ends idle ones when retired. */
  private pump(): void {
    for (const slot of this.slots) {
      if (!slot.isIdle) continue;
      const call = this.queue.shift();
      if (call) {
        clearTimeout(call.queueTimer);
        slot.take(call);
      } else if (this.retired || this.terminated) {
        void slot.stop();
      }
    }
    if (this.terminated) return;
    const loading = [...this.slots].filter((slot) => slot.isLoading).length;
    const canGrow = this.slots.size === 0 || (!this.growthFailed && this.slots.size < this.limits.workers);
    if (this.queue.length > loading && canGrow) this.grow();
  }

  private grow(): void {
    this.spawn();
  }

  private onGone(slot: TransformSlot): void {
    this.slots.delete(slot);
    // A new worker could not load the module (edited or removed since?). Never retry in
    // a loop: with workers left, stop adding more; with none, fail what waits.
    const loadError = slot.loadError;
    if (loadError && this.slots.size > 0) this.growthFailed = true;
    else if (loadError) this.rejectQueue(loadError);
    if (this.slots.size === 0 && (this.retired || this.terminated)) {
      this.allGone?.();
      return;
    }
    if (loadError) return;
    this.pump();
    // Keep one warm worker, so the call after a timeout or crash does not pay for a start.
    if (this.slots.size === 0 && !this.retired && !this.terminated) this.grow();
  }

  private rejectQueue(error: Error): void {
    for (const call of this.queue.splice(0)) {
      clearTimeout(call.queueTimer);
      call.reject(error);
    }
  }

  private whenEmpty(): Promise<void> {
    if (this.slots.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.allGone;
      this.allGone = () => {
        previous?.();
        resolve();
      };
    });
  }
}
