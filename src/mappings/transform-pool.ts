/**
 * A small pool of long-lived worker threads for one transform module. Calls
 * wait in one FIFO queue and go to the least loaded worker that can take them;
 * a worker may hold a few at once (sent ahead), but gets no more once it has
 * been silent for a moment, so a stuck worker collects no queue. When a call
 * overruns, its worker is terminated and the calls it held that had not
 * started come back to the front of the queue for another worker.
 *
 * Deadlines: a call has `timeoutMs` from the moment a worker starts it, and may
 * wait at most `queueTimeoutMs` before that (in the queue, or again after being
 * handed back); both fail as TransformTimeoutError (500 mapping_failed).
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

/** A transform call that has not settled after this is cut off (docs/transforms.md, "Bounds"). */
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
  /** Calls one worker may hold at once (sent ahead, so replies come back in bursts). */
  callsPerWorker: number;
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
  callsPerWorker: 8,
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
      this.enqueue({ input, resolve, reject }, 'last');
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
      requeue: (call) => this.requeue(call),
      gone: (gone) => this.onGone(gone),
    });
    this.slots.add(slot);
    return slot;
  }

  /**
   * Hands waiting calls to the least loaded worker that can take one, starts a worker when
   * every one is busy, and ends idle workers when retired.
   */
  private pump(): void {
    const now = Date.now();
    while (this.queue.length > 0) {
      let target: TransformSlot | undefined;
      for (const slot of this.slots) {
        if (slot.canTake(now) && (target === undefined || slot.load < target.load)) target = slot;
      }
      if (!target) break;
      const call = this.queue.shift() as QueuedCall;
      clearTimeout(call.queueTimer);
      target.take(call, now);
    }
    if (this.retired || this.terminated) {
      for (const slot of this.slots) if (slot.isIdle) void slot.stop();
    }
    if (this.terminated) return;
    const slots = [...this.slots];
    const loading = slots.filter((slot) => slot.isLoading).length;
    const allBusy = slots.every((slot) => !slot.isIdle);
    const canGrow = this.slots.size === 0 || (!this.growthFailed && this.slots.size < this.limits.workers);
    // Calls waiting, or every worker busy while calls keep coming: add a worker.
    if (canGrow && loading === 0 && (this.queue.length > 0 || (allBusy && this.busyWithWaiting())))
      this.grow();
  }

  /** True when some worker holds calls sent ahead that wait behind another call. */
  private busyWithWaiting(): boolean {
    for (const slot of this.slots) if (slot.load > 1) return true;
    return false;
  }

  /** A call sent to a worker that ended before starting it: first in line again, with a fresh wait bound. */
  private requeue(call: PendingCall): void {
    if (this.terminated) call.reject(new TransformError(`${this.label}: the gateway is stopping`));
    else this.enqueue(call, 'first');
  }

  private enqueue(call: PendingCall, place: 'first' | 'last'): void {
    const queued: QueuedCall = {
      ...call,
      queueTimer: setTimeout(() => {
        const at = this.queue.indexOf(queued);
        if (at >= 0) this.queue.splice(at, 1);
        call.reject(
          new TransformTimeoutError(
            `${this.label}: no worker was free within ${this.limits.queueTimeoutMs} ms`,
          ),
        );
      }, this.limits.queueTimeoutMs),
    };
    if (place === 'first') this.queue.unshift(queued);
    else this.queue.push(queued);
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
      // Calls handed back by the last worker of a retired pool still get served.
      if (this.queue.length > 0 && !loadError) this.pump();
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
