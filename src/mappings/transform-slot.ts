/**
 * One transform worker thread and the calls sent to it. The thread imports the
 * module once and serves calls in arrival order; a few may be sent ahead, so
 * that under load replies come back in bursts rather than one per event-loop
 * turn (which also lets the store commit them together).
 *
 * Each call's deadline counts from the moment the worker starts it (read off
 * the shared CallBoard). When a started call overruns, the slot terminates the
 * thread — the only way to end a synchronous loop — and the calls sent ahead
 * that had not started are withdrawn and handed back to the pool to run
 * elsewhere; calls that had started on that thread fail with it. A thread that
 * ends on its own (process.exit in the transform, an uncaught error in a timer,
 * the heap limit) is handled the same way.
 */
import { type ResourceLimits, Worker } from 'node:worker_threads';
import {
  type TransformAction,
  TransformError,
  type TransformInput,
  TransformTimeoutError,
  validateAction,
} from './transform-action.js';
import { CallBoard } from './transform-board.js';
import type { CallReply, LoadReply, SerializedError, WorkerData, WorkerSpec } from './transform-protocol.js';

export interface PendingCall {
  input: TransformInput;
  resolve: (action: TransformAction | null) => void;
  reject: (error: Error) => void;
}

export interface SlotOptions {
  timeoutMs: number;
  /** How long a sent call may wait in the worker before it starts (it is then withdrawn). */
  queueTimeoutMs: number;
  loadTimeoutMs: number;
  /** Most calls sent to one worker at once. */
  callsPerWorker: number;
  resourceLimits: ResourceLimits;
}

export interface SlotEvents {
  /** The slot loaded, or finished a call, and can take more. */
  free(slot: TransformSlot): void;
  /** A call sent to this slot never started and never will here: run it elsewhere. */
  requeue(call: PendingCall): void;
  /** The thread is gone (stopped, crashed, or never loaded); the slot is finished. */
  gone(slot: TransformSlot): void;
}

/** A worker that has not answered for this long gets no more calls sent ahead (it may be stuck). */
const STALL_MS = 50;

/**
 * The compiled worker sits beside this file in dist/. Under vitest this module
 * runs from src/*.ts with no .js beside it, and Node 20 cannot start a Worker
 * from TypeScript, so tests use the compiled worker (they run after `npm run build`).
 */
const WORKER_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/mappings/transform-worker.js', import.meta.url)
  : new URL('./transform-worker.js', import.meta.url);

interface SentCall extends PendingCall {
  seq: number;
  cell: number;
  sentAt: number;
  timer: NodeJS.Timeout;
}

export class TransformSlot {
  private loadedOk = false;
  private ended = false;
  private readonly worker: Worker;
  private readonly board: CallBoard;
  /** Calls sent and not settled, in the order sent. */
  private readonly sent = new Map<number, SentCall>();
  private nextSeq = 1;
  /** Board cells no unsettled call holds. */
  private readonly freeCells: number[];
  /** Last time the worker answered, or was handed work while empty. */
  private lastProgress = 0;
  /** Set before we terminate the thread ourselves. */
  private stopping = false;
  /** Why the thread is being stopped: what started calls fail with. */
  private stopReason: Error | undefined;
  /** The thread's uncaught error, reported before its exit. */
  private crash: Error | undefined;
  private loadFailure: Error | undefined;
  /** Settles when the module has loaded (or failed to: the slot is then gone). */
  readonly loaded: Promise<void>;

  constructor(
    private readonly spec: WorkerSpec,
    private readonly options: SlotOptions,
    private readonly events: SlotEvents,
  ) {
    this.board = CallBoard.create(options.callsPerWorker);
    this.freeCells = Array.from({ length: options.callsPerWorker }, (_, cell) => cell);
    this.worker = new Worker(WORKER_URL, {
      workerData: { ...spec, board: this.board.memory } satisfies WorkerData,
      // Only what a transform needs: no copy of the gateway's environment (tokens,
      // AGENTGATE_* settings), no command-line flags or preloads of the gateway.
      env: {},
      argv: [],
      execArgv: [],
      resourceLimits: options.resourceLimits,
    });
    // An idle worker must never keep the process alive (a stop or SIGTERM would hang);
    // a call in flight keeps it alive through its deadline timer.
    this.worker.unref();
    this.loaded = new Promise((resolve, rejectLoad) => {
      const reject = (error: Error) => {
        this.loadFailure = error;
        rejectLoad(error);
      };
      const loadTimer = setTimeout(() => {
        reject(new TransformTimeoutError(`${this.label}: did not load within ${options.loadTimeoutMs} ms`));
        void this.stop();
      }, options.loadTimeoutMs);
      this.worker.once('message', (reply: LoadReply | undefined) => {
        clearTimeout(loadTimer);
        if (reply?.loaded !== true) {
          // The worker already phrased it: `transform "<module>": <why>`. (The module's own
          // code runs first and could post something else: never trust the shape.)
          const why = reply?.loaded === false ? String(reply.error?.message) : undefined;
          reject(new TransformError(why ?? `${this.label}: failed to load: unexpected first message`));
          void this.stop();
          return;
        }
        this.loadedOk = true;
        this.worker.on('message', (message: CallReply) => this.settle(message));
        resolve();
        this.events.free(this);
      });
      this.worker.on('error', (error) => {
        this.crash = error;
      });
      this.worker.on('messageerror', (error) => {
        void this.stop(new TransformError(`${this.label}: a reply could not be read: ${error.message}`));
      });
      this.worker.on('exit', (code) => {
        clearTimeout(loadTimer);
        const why = this.crash ? this.crash.message : `exit code ${code}`;
        if (!this.loadedOk && !this.loadFailure) {
          reject(new TransformError(`${this.label}: failed to load: its worker stopped (${why})`));
        }
        this.ended = true;
        this.release(this.stopReason ?? new TransformError(`${this.label}: its worker stopped (${why})`));
        this.events.gone(this);
      });
    });
    // A load failure is reported to whoever awaits `loaded`; never as an unhandled rejection.
    this.loaded.catch(() => {});
  }

  /** Calls sent and not yet answered. */
  get load(): number {
    return this.sent.size;
  }

  /** True when a call may be sent now: loaded, not stopping, room left, and not apparently stuck. */
  canTake(now: number): boolean {
    if (!this.loadedOk || this.stopping || this.ended) return false;
    if (this.sent.size === 0) return true;
    return this.sent.size < this.options.callsPerWorker && now - this.lastProgress < STALL_MS;
  }

  get isIdle(): boolean {
    return this.loadedOk && !this.stopping && !this.ended && this.sent.size === 0;
  }

  get isLoading(): boolean {
    return !this.loadedOk && !this.stopping && !this.ended;
  }

  /** Why the module did not load, when the slot ended before loading. */
  get loadError(): Error | undefined {
    return this.loadFailure;
  }

  private get label(): string {
    return `transform "${this.spec.module}"`;
  }

  /** Sends a call; its deadline starts when the worker starts it. */
  take(call: PendingCall, now = Date.now()): void {
    if (!this.canTake(now)) throw new Error('transform slot cannot take a call now');
    const seq = this.nextSeq++;
    const cell = this.freeCells.pop() as number; // canTake: fewer sent than cells
    if (this.sent.size === 0) this.lastProgress = now;
    this.board.open(cell, seq);
    const sent: SentCall = {
      ...call,
      seq,
      cell,
      sentAt: now,
      timer: setTimeout(() => this.check(sent), this.options.timeoutMs),
    };
    this.sent.set(seq, sent);
    try {
      this.worker.postMessage({ id: seq, cell, input: call.input });
    } catch (error) {
      // The input could not be cloned: the worker never saw it.
      this.board.withdraw(cell, seq);
      this.forget(sent);
      call.reject(
        new TransformError(`${this.label}: its input could not be sent: ${(error as Error).message}`),
      );
    }
  }

  /**
   * Terminates the thread. Calls that had not started go back to the pool; started ones
   * fail with `reason`. Resolves once the thread has exited.
   */
  async stop(reason?: Error): Promise<void> {
    if (this.ended) return;
    this.stopping = true;
    this.stopReason ??= reason ?? new TransformError(`${this.label}: its worker was stopped`);
    await this.worker.terminate();
  }

  /** A call's timer: overrun since it started → stop the thread; not started in time → withdraw it. */
  private check(call: SentCall): void {
    if (this.sent.get(call.seq) !== call) return;
    const now = Date.now();
    const startedAt = this.board.startedAt(call.cell, call.seq);
    if (startedAt === undefined) {
      // Still waiting behind earlier calls on this worker.
      if (now - call.sentAt >= this.options.queueTimeoutMs && this.board.withdraw(call.cell, call.seq)) {
        this.forget(call);
        call.reject(
          new TransformTimeoutError(
            `${this.label}: no worker was free within ${this.options.queueTimeoutMs} ms`,
          ),
        );
        return;
      }
      call.timer = setTimeout(() => this.check(call), this.options.timeoutMs);
      return;
    }
    const left = Math.max(startedAt, call.sentAt) + this.options.timeoutMs - now;
    if (left > 0) {
      call.timer = setTimeout(() => this.check(call), left);
      return;
    }
    this.forget(call);
    call.reject(
      new TransformTimeoutError(
        `${this.label} did not finish within ${this.options.timeoutMs} ms; its worker was stopped`,
      ),
    );
    void this.stop(
      new TransformError(`${this.label}: its worker was stopped because another call on it ran out of time`),
    );
  }

  private settle(reply: CallReply): void {
    // Anything else on the port (a transform may post messages itself) is not a reply.
    if (typeof reply !== 'object' || reply === null) return;
    const call = this.sent.get(reply.id);
    if (!call) return;
    this.forget(call);
    this.lastProgress = Date.now();
    if (reply.error) call.reject(revive(reply.error));
    else {
      try {
        call.resolve(validateAction(reply.action));
      } catch (error) {
        call.reject(error as Error);
      }
    }
    this.events.free(this);
  }

  private forget(call: SentCall): void {
    clearTimeout(call.timer);
    if (this.sent.delete(call.seq)) this.freeCells.push(call.cell);
  }

  /** The thread is gone: hand back what never started, fail what did. */
  private release(reason: Error): void {
    // Last sent first: each goes to the front of the pool's queue, so they keep their order.
    for (const call of [...this.sent.values()].reverse()) {
      this.forget(call);
      if (this.board.withdraw(call.cell, call.seq)) this.events.requeue(call);
      else call.reject(reason);
    }
  }
}

/** The transform's own error, rebuilt on this side (name, message and stack survive; the class does not). */
function revive(serialized: SerializedError): Error {
  const error = serialized?.name === 'TransformError' ? new TransformError('') : new Error();
  error.message = String(serialized?.message);
  error.name = String(serialized?.name ?? 'Error');
  if (typeof serialized?.stack === 'string') error.stack = serialized.stack;
  return error;
}
