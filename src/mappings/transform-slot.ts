/**
 * One transform worker thread and the call it is serving. The thread imports
 * the module once and then serves calls one at a time; the slot owns each
 * call's deadline and stops the thread from outside when it passes, which is
 * the only way to end a synchronous loop. A thread that ends on its own
 * (process.exit in the transform, an uncaught error in a timer, the heap
 * limit) fails the call it was serving and is reported gone.
 */
import { type ResourceLimits, Worker } from 'node:worker_threads';
import {
  type TransformAction,
  TransformError,
  type TransformInput,
  TransformTimeoutError,
  validateAction,
} from './transform-action.js';
import type { CallReply, LoadReply, SerializedError, WorkerSpec } from './transform-protocol.js';

export interface PendingCall {
  input: TransformInput;
  resolve: (action: TransformAction | null) => void;
  reject: (error: Error) => void;
}

export interface SlotOptions {
  timeoutMs: number;
  loadTimeoutMs: number;
  resourceLimits: ResourceLimits;
}

export interface SlotEvents {
  /** The slot loaded, or finished a call, and can take another. */
  free(slot: TransformSlot): void;
  /** The thread is gone (stopped, crashed, or never loaded); the slot is finished. */
  gone(slot: TransformSlot): void;
}

type State = 'loading' | 'idle' | 'busy' | 'gone';

/**
 * The compiled worker sits beside this file in dist/. Under vitest this module
 * runs from src/*.ts with no .js beside it, and Node 20 cannot start a Worker
 * from TypeScript, so tests use the compiled worker (they run after `npm run build`).
 */
const WORKER_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/mappings/transform-worker.js', import.meta.url)
  : new URL('./transform-worker.js', import.meta.url);

let nextCallId = 1;

export class TransformSlot {
  private state: State = 'loading';
  private readonly worker: Worker;
  private call: (PendingCall & { id: number; deadline: NodeJS.Timeout }) | undefined;
  /** Set before we terminate the thread ourselves, so its exit is not taken for a crash. */
  private stopping = false;
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
    this.worker = new Worker(WORKER_URL, {
      workerData: spec,
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
        this.state = 'idle';
        this.worker.on('message', (message: CallReply) => this.settle(message));
        resolve();
        this.events.free(this);
      });
      this.worker.on('error', (error) => {
        this.crash = error;
      });
      this.worker.on('messageerror', (error) => {
        this.fail(new TransformError(`${this.label}: its reply could not be read: ${error.message}`));
        void this.stop();
      });
      this.worker.on('exit', (code) => {
        clearTimeout(loadTimer);
        const why = this.crash ? this.crash.message : `exit code ${code}`;
        if (this.state === 'loading' && !this.loadFailure) {
          reject(new TransformError(`${this.label}: failed to load: its worker stopped (${why})`));
        }
        if (!this.stopping) this.fail(new TransformError(`${this.label}: its worker stopped (${why})`));
        this.state = 'gone';
        this.events.gone(this);
      });
    });
    // A load failure is reported to whoever awaits `loaded`; never as an unhandled rejection.
    this.loaded.catch(() => {});
  }

  get isIdle(): boolean {
    return this.state === 'idle' && !this.stopping;
  }

  get isLoading(): boolean {
    return this.state === 'loading' && !this.stopping;
  }

  /** Why the module did not load, when the slot ended before loading. */
  get loadError(): Error | undefined {
    return this.loadFailure;
  }

  private get label(): string {
    return `transform "${this.spec.module}"`;
  }

  /** Hands an idle slot a call; its deadline starts now. */
  take(call: PendingCall): void {
    if (this.state !== 'idle') throw new Error(`transform slot is ${this.state}, not idle`);
    const id = nextCallId++;
    const deadline = setTimeout(() => {
      this.fail(
        new TransformTimeoutError(
          `${this.label} did not finish within ${this.options.timeoutMs} ms; its worker was stopped`,
        ),
      );
      void this.stop();
    }, this.options.timeoutMs);
    this.call = { ...call, id, deadline };
    this.state = 'busy';
    try {
      this.worker.postMessage({ id, input: call.input });
    } catch (error) {
      // The input could not be cloned: the worker never saw it and is still free.
      this.fail(
        new TransformError(`${this.label}: its input could not be sent: ${(error as Error).message}`),
      );
      this.state = 'idle';
      this.events.free(this);
    }
  }

  /** Terminates the thread; a call in flight fails. Resolves once it has exited. */
  async stop(): Promise<void> {
    if (this.state === 'gone') return;
    this.stopping = true;
    this.fail(new TransformError(`${this.label}: its worker was stopped`));
    await this.worker.terminate();
  }

  private settle(reply: CallReply): void {
    const call = this.call;
    // Anything else on the port (a transform may post messages itself) is not a reply.
    if (!call || typeof reply !== 'object' || reply === null || reply.id !== call.id) return;
    clearTimeout(call.deadline);
    this.call = undefined;
    this.state = 'idle';
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

  /** Rejects the call in flight, if any. */
  private fail(error: Error): void {
    const call = this.call;
    if (!call) return;
    clearTimeout(call.deadline);
    this.call = undefined;
    call.reject(error);
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
