/**
 * One writer per SQLite file (docs/operating.md, "The SQLite file"). The store
 * keeps state in memory that is right only while its process is the
 * database's one writer (the newest pending event per session, for wake
 * coalescing), and two gateways on one file would both deliver every reply.
 * So a store holds this lock for as long as it is open, and a second one on
 * the same file refuses to open.
 *
 * The lock is an EXCLUSIVE transaction, left open, on a companion file
 * `<db>.lock`, through a connection of its own with no busy wait:
 * - SQLite takes it as a POSIX advisory lock (fcntl), which the kernel drops
 *   when the process ends in any way, `kill -9` included: nothing stale is left
 *   to block the next start, and no pid to check (pids are reused);
 * - it is a file of its own, so the database stays open to readers
 *   (`agentgate doctor`, `sqlite3`, a backup) while the gateway runs; locking
 *   the database itself would shut them out;
 * - SQLite tracks its locks per connection, so a second store in the same
 *   process is refused too, where a bare fcntl lock would be granted again;
 * - `journal_mode = MEMORY` and no write: the lock file stays empty and no
 *   `-journal` appears beside it (better-sqlite3 refuses `journal_mode = OFF`).
 * Node has no flock, and this needs no other dependency than the store's own.
 */
import Database from 'better-sqlite3';
import { createPrivateFile } from './private-files.js';

/** A second gateway (or store) on a database file that a running one holds. */
export class StoreInUseError extends Error {
  constructor(readonly path: string) {
    super(
      `${path} is in use by another running agentgate (it holds ${path}.lock); ` +
        'stop that gateway first, or give this one its own store.path',
    );
    this.name = 'StoreInUseError';
  }
}

export class WriterLock {
  private constructor(private readonly connection: Database.Database) {}

  /** Takes the lock on `dbPath` at once, or throws `StoreInUseError` naming it. */
  static take(dbPath: string): WriterLock {
    const lockPath = `${dbPath}.lock`;
    createPrivateFile(lockPath);
    const connection = new Database(lockPath, { timeout: 0 });
    try {
      connection.pragma('journal_mode = MEMORY');
      connection.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      connection.close();
      if ((error as { code?: string }).code === 'SQLITE_BUSY') throw new StoreInUseError(dbPath);
      throw error;
    }
    return new WriterLock(connection);
  }

  release(): void {
    if (this.connection.open) this.connection.close();
  }
}
