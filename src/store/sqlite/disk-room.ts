/**
 * Whether the filesystem holding the SQLite file has room for the WAL's next
 * pages, for the readiness probe (docs/operating.md, "When `/readyz` says the
 * store cannot commit"). The probe's own commit is not enough on a full disk:
 * it is one page, and it can land in WAL space the checkpointer already
 * recycled, while a hook's commit, a few pages more, is refused. Free space
 * answers the same way every time.
 */
import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';

/** Below this much free space `/readyz` answers 503: one WAL restart cycle (store/sqlite/sqlite-store.ts). */
export const MIN_FREE_BYTES = 8 * 1024 * 1024;

/** Why the store's disk has too little room, or undefined when it has enough (or cannot be asked). */
export function lowDiskRoom(databasePath: string, minFree = MIN_FREE_BYTES): string | undefined {
  if (databasePath === ':memory:' || databasePath === '') return undefined;
  let free: number;
  try {
    const stats = statfsSync(dirname(databasePath));
    free = stats.bavail * stats.bsize;
  } catch {
    return undefined; // a filesystem that cannot say: the commit probe alone decides
  }
  if (free >= minFree) return undefined;
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return `the disk holding ${databasePath} has ${mib(free)} free, below the ${mib(minFree)} a commit may need`;
}
