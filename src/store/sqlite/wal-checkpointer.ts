/**
 * WAL checkpoints off the event loop. A checkpoint copies the WAL into the
 * database file and fsyncs it; run by the gateway's own connection (SQLite's
 * autocheckpoint, inside the COMMIT that crosses the threshold) it stalled every
 * request in flight for 40–100 ms every ~40 MB of WAL. Here a worker thread with
 * a connection of its own does it (wal-checkpoint-worker.ts) while the gateway
 * goes on committing; see docs/operating.md, "The WAL on SQLite".
 *
 * The gateway's connection keeps an autocheckpoint at a larger size as a safety
 * net only: should this thread die or be kept from resetting the WAL, the WAL
 * still stops growing there, as before, at the cost of that stall.
 */
import { Worker } from 'node:worker_threads';
import type { CheckpointWorkerData } from './wal-checkpoint-worker.js';

/** Under vitest the sources are TypeScript; the thread runs the built file. */
const WORKER_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../../dist/store/sqlite/wal-checkpoint-worker.js', import.meta.url)
  : new URL('./wal-checkpoint-worker.js', import.meta.url);

export interface WalCheckpointerOptions {
  path: string;
  synchronous: 'NORMAL' | 'FULL';
  /** How often the thread copies the WAL into the database file. */
  intervalMs?: number;
  /** WAL size, in pages, at which the thread makes the next commit start the WAL over. */
  restartPages: number;
}

export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  /** The last checkpoint that failed (the thread tries again on its next tick). */
  lastError: string | undefined;
  /** Whether the thread has started running its code (it checkpoints from then on). */
  online = false;

  constructor(options: WalCheckpointerOptions) {
    const data: CheckpointWorkerData = {
      path: options.path,
      synchronous: options.synchronous,
      intervalMs: options.intervalMs ?? 100,
      restartPages: options.restartPages,
      // RESTART holds the write lock while it waits for readers: the gateway's next
      // commit waits as long, so it gives up early rather than stall the gateway.
      busyTimeoutMs: 20,
    };
    this.worker = new Worker(WORKER_URL, { workerData: data, env: {}, argv: [], execArgv: [] });
    this.worker.once('online', () => {
      this.online = true;
    });
    this.worker.on('message', (message: { kind: string; message: string }) => {
      if (message.kind === 'error') this.lastError = message.message;
    });
    // A thread that failed to start or crashed: the safety net above keeps the WAL bounded.
    this.worker.on('error', (error) => {
      this.lastError = error.message;
    });
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    // Never what keeps a process alive; close() waits for it explicitly.
    this.worker.unref();
  }

  /** The thread's id, for tests that check it is gone after close(). */
  get threadId(): number {
    return this.worker.threadId;
  }

  /** Lets a checkpoint in progress finish, closes the thread's connection, waits for its exit. */
  async stop(): Promise<void> {
    // Waited for, it must keep the process alive: else a process whose last work is this
    // wait (a gateway closing its store after a failed start) exits before it ends.
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
