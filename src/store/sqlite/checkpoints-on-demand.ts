/**
 * The WAL checkpointer thread (wal-checkpointer.ts) only while the gateway writes: a
 * thread is a V8 isolate of its own, about 9 MB resident, and a gateway that writes little
 * or nothing has next to nothing to checkpoint (docs/operating.md, "The WAL on SQLite").
 *
 * The thread starts once the WAL file holds `startBytes` (1 MiB by default, an eighth of
 * the size at which the thread gets the WAL started over): at the store's open — a WAL left
 * by a gateway that did not stop cleanly — or at a look, every `lookMs`, that finds the
 * gateway's connection has written since the last one (SQLite's `total_changes()`, a
 * counter in memory). It stops after `idleLooks` looks in a row without a write, counted
 * once it runs; by then its 100 ms passes have copied every frame, and on its way out it
 * empties the WAL file, so that the file's size counts the writes since.
 *
 * Nothing depends on the thread for durability: a commit is durable in the WAL, and the
 * gateway's own connection checkpoints past its safety net should the thread be missing.
 */
import { existsSync, statSync } from 'node:fs';
import { WalCheckpointer, type WalCheckpointerOptions } from './wal-checkpointer.js';

export interface CheckpointsOnDemandOptions extends WalCheckpointerOptions {
  /** How many rows the gateway's connection has changed since it opened. */
  writes: () => number;
  /** WAL file size at which the thread starts. */
  startBytes?: number;
  /** How often the gateway looks whether it wrote. */
  lookMs?: number;
  /** Looks in a row without a write after which the thread stops. */
  idleLooks?: number;
}

export const DEFAULT_START_BYTES = 1024 * 1024;
/** Often enough that a burst of writes (~25 MB/s of WAL) starts the thread before the WAL reaches its restart size. */
export const DEFAULT_LOOK_MS = 250;
/** A minute without a write. */
export const DEFAULT_IDLE_LOOKS = 240;

export class CheckpointsOnDemand {
  private thread: WalCheckpointer | undefined;
  /** Threads told to stop whose exit stop() still waits for. */
  private readonly stopping = new Set<Promise<void>>();
  private lastWrites: number;
  private looksWithoutWrite = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly walPath: string;
  private readonly startBytes: number;
  private readonly idleLooks: number;

  constructor(private readonly options: CheckpointsOnDemandOptions) {
    this.walPath = `${options.path}-wal`;
    this.startBytes = options.startBytes ?? DEFAULT_START_BYTES;
    this.idleLooks = options.idleLooks ?? DEFAULT_IDLE_LOOKS;
    this.lastWrites = options.writes();
    if (this.walBytes() >= this.startBytes) this.startThread();
    this.timer = setInterval(() => this.look(), options.lookMs ?? DEFAULT_LOOK_MS);
    // Never what keeps a process alive.
    this.timer.unref();
  }

  /** Whether a checkpointer thread runs now. */
  get running(): boolean {
    return this.thread !== undefined;
  }

  /** The running thread's last failed checkpoint (it tries again on its next tick). */
  get lastError(): string | undefined {
    return this.thread?.lastError;
  }

  /** Stops looking, and stops the thread (a checkpoint in progress finishes first). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopThread();
    await Promise.all(this.stopping);
  }

  private look(): void {
    const writes = this.options.writes();
    const wrote = writes !== this.lastWrites;
    this.lastWrites = writes;
    if (!this.thread) {
      if (wrote && this.walBytes() >= this.startBytes) this.startThread();
      return;
    }
    if (wrote) this.looksWithoutWrite = 0;
    // Counted from when the thread runs: one still starting has copied nothing yet.
    else if (this.thread.online && ++this.looksWithoutWrite >= this.idleLooks) this.stopThread();
  }

  private walBytes(): number {
    return existsSync(this.walPath) ? statSync(this.walPath).size : 0;
  }

  private startThread(): void {
    const { path, synchronous, intervalMs, restartPages } = this.options;
    this.looksWithoutWrite = 0;
    this.thread = new WalCheckpointer({ path, synchronous, intervalMs, restartPages });
  }

  private stopThread(): void {
    const thread = this.thread;
    if (!thread) return;
    this.thread = undefined;
    const exited = thread.stop().finally(() => this.stopping.delete(exited));
    this.stopping.add(exited);
  }
}
