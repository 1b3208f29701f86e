/**
 * Syncs the WAL to the disk off the event-loop thread, shared by every commit
 * that waits for it: how `store.synchronous: "full"` makes an answer survive
 * power loss without an fsync inside each COMMIT (docs/durability.md).
 *
 * The connection commits with `synchronous = NORMAL`: COMMIT returns once its
 * WAL frames are written to the OS, in a fraction of a millisecond. A commit
 * whose answer must survive power loss then awaits `covered()`, which resolves
 * once an `fdatasync` of the WAL file that *started after the call* has
 * returned (Linux syncs a file's dirty pages whichever descriptor asks). The
 * sync runs on libuv's thread pool, so the event loop goes on reading requests
 * meanwhile; the accepts' group commit (store/rules/group-commit.ts) commits the
 * next batch once the sync returned, so the requests that arrived during a sync
 * share one commit and then one sync — a round per sync, however many answers
 * it serves.
 *
 * Why not `synchronous = FULL`: it fsyncs inside every COMMIT, on the event-loop
 * thread, which reads no request meanwhile (docs/performance.md has both
 * measured). Torn or unsynced frames are what WAL recovery already discards in
 * NORMAL mode, so the file is never corrupted either way; what the sync adds is
 * that an answered commit is on the disk.
 */
import { closeSync, fdatasync, fstatSync, openSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';

/** fdatasync(2) on libuv's thread pool. */
const syncDescriptor = promisify(fdatasync);

interface Round {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function newRound(): Round {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export class WalSync {
  private fd: number;
  private inode: number;
  /** The sync running now; a waiter that arrives during it needs the next one. */
  private inFlight: Round | undefined;
  /** The next sync, gathering its waiters until it starts. */
  private forming: Round | undefined;
  private closed = false;
  /** Whether the WAL's name (its directory entry) is known to be on the disk too. */
  private nameSynced = false;

  /** `walPath` must exist: open it once the connection has read the database (it creates the WAL). */
  constructor(
    private readonly walPath: string,
    /** The sync itself (tests count and delay it). */
    private readonly syncFile: (fd: number) => Promise<void> = syncDescriptor,
  ) {
    this.fd = openSync(walPath, 'r');
    this.inode = fstatSync(this.fd).ino;
  }

  /**
   * Resolves once every commit that returned before this call is on the disk. The
   * sync starts at the end of this event-loop turn (or when the one in flight
   * returns), so the answers of one group commit share it.
   */
  covered(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    if (!this.forming) {
      this.forming = newRound();
      if (!this.inFlight) setImmediate(() => this.startForming());
    }
    return this.forming.promise;
  }

  /** Waits for the syncs asked for, then closes the descriptor. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.inFlight || this.forming) {
      await (this.inFlight ?? this.forming)?.promise.catch(() => undefined);
    }
    closeSync(this.fd);
  }

  private startForming(): void {
    const round = this.forming;
    if (!round || this.inFlight) return;
    this.forming = undefined;
    this.inFlight = round;
    this.syncOnce().then(
      () => this.finish(round),
      (error: unknown) => this.finish(round, error),
    );
  }

  /** The next round starts before this one's waiters hear back, so none of them can slip in between. */
  private finish(round: Round, error?: unknown): void {
    this.inFlight = undefined;
    this.startForming();
    if (error === undefined) round.resolve();
    else round.reject(error);
  }

  private async syncOnce(): Promise<void> {
    this.followFile();
    await this.syncFile(this.fd);
    if (!this.nameSynced) {
      await syncNames(this.walPath);
      this.nameSynced = true;
    }
  }

  /**
   * SQLite keeps its WAL file while the store is open, but should the file ever be
   * replaced under the same name, the new one is what holds the frames: follow it.
   */
  private followFile(): void {
    const current = statSync(this.walPath, { throwIfNoEntry: false });
    if (!current || current.ino === this.inode) return;
    const fd = openSync(this.walPath, 'r');
    closeSync(this.fd);
    this.fd = fd;
    this.inode = current.ino;
    this.nameSynced = false;
  }
}

/**
 * A file's data synced is not enough when the file is new: its name lives in its
 * directory, which must be synced too, or a power cut can leave the data with no name.
 * SQLite would do this on the WAL's first sync of its own, which "full" no longer asks it
 * for; the directory above (the gateway may have made both) is synced as well.
 */
async function syncNames(path: string): Promise<void> {
  const folder = dirname(path);
  for (const directory of [folder, dirname(folder)]) {
    const handle = await open(directory, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}
