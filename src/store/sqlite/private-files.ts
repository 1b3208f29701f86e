/**
 * The SQLite store's files are private to the user running the gateway: the
 * database holds every message, reply and transcript (docs/operating.md, "The
 * SQLite file"). What the gateway creates is made 0600 (files) and 0700
 * (directories) whatever the umask; what already exists keeps its mode, which
 * `agentgate doctor` checks.
 *
 * SQLite gives the `-wal` and `-shm` files it creates the mode of the database
 * file (its unix VFS copies it and fchmods them), so creating the database file
 * 0600 before SQLite opens it is what makes those 0600 too.
 */
import { chmodSync, closeSync, existsSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** Creates `dir` and any missing parents, each 0700; existing ones are left as they are. */
export function makePrivateDir(dir: string): void {
  const missing: string[] = [];
  for (let path = resolve(dir); !existsSync(path); path = dirname(path)) {
    missing.unshift(path);
    if (dirname(path) === path) break;
  }
  for (const path of missing) {
    try {
      mkdirSync(path, { mode: DIR_MODE });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue; // made meanwhile: not ours
      throw error;
    }
    // The umask may have taken bits off; one missing owner bit and the next mkdir would fail.
    chmodSync(path, DIR_MODE);
  }
}

/**
 * Creates an empty `path` 0600 unless it exists. An existing file is never
 * opened here: closing a descriptor drops every POSIX lock this process holds
 * on the file, SQLite's included, so open-then-close could free a lock held by
 * another connection of this process. Creating exclusively (`wx`) cannot: no
 * one holds a lock on a file that did not exist.
 */
export function createPrivateFile(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'wx', FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  try {
    fchmodSync(fd, FILE_MODE); // whatever the umask
  } finally {
    closeSync(fd);
  }
}
