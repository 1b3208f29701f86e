/**
 * Reads an `strace -f -y` log of the gateway and checks the order that makes a
 * 2xx survive power loss: every answer starting `HTTP/1.1 2` written to a TCP
 * socket must come after a sync (fdatasync/fsync) of the WAL that followed the
 * last WAL write before it. Only the process's main thread counts — it is the
 * thread that commits and answers; a sync by another thread (the checkpointer)
 * is ignored, which can only make the check stricter.
 */

export interface SyscallOrder {
  /** 2xx answers seen on TCP sockets. */
  answers: number;
  /** WAL writes (pwrite/write on the -wal file) by the main thread. */
  walWrites: number;
  /** Syncs of the WAL by the main thread. */
  walSyncs: number;
  /** 2xx answers written while a WAL write was not yet synced. */
  unsyncedAnswers: number;
  /** The first such line, to show in a failure. */
  firstUnsynced?: string;
}

const LINE = /^(\d+)\s+(?:\d+:\d+:\d+\.\d+\s+)?(\w+)\((\d+)<([^>]*)>(.*)$/;
const WRITE_CALLS = new Set(['write', 'writev', 'pwrite64', 'pwritev', 'pwritev2', 'sendto', 'sendmsg']);
const SYNC_CALLS = new Set(['fdatasync', 'fsync']);
/** A call's end when strace printed another thread's line in between: `<... fdatasync resumed>) = 0`. */
const RESUMED_SYNC = /^(\d+)\s+(?:\d+:\d+:\d+\.\d+\s+)?<\.\.\. (?:fdatasync|fsync) resumed>.*= 0\s*$/;

export function checkSyscallOrder(log: string, mainPid: number): SyscallOrder {
  const order: SyscallOrder = { answers: 0, walWrites: 0, walSyncs: 0, unsyncedAnswers: 0 };
  let unsynced = false;
  let walSyncUnfinished = false;
  for (const line of log.split('\n')) {
    const resumed = RESUMED_SYNC.exec(line);
    if (resumed && Number(resumed[1]) === mainPid && walSyncUnfinished) {
      walSyncUnfinished = false;
      order.walSyncs++;
      unsynced = false;
      continue;
    }
    const match = LINE.exec(line);
    if (!match || Number(match[1]) !== mainPid) continue;
    const [, , call, , target, rest] = match as unknown as [string, string, string, string, string, string];
    const onWal = target.endsWith('-wal');
    if (onWal && WRITE_CALLS.has(call)) {
      order.walWrites++;
      unsynced = true;
    } else if (onWal && SYNC_CALLS.has(call)) {
      // A sync counts once it returned: strace prints "= 0" on the same line, or on the
      // "resumed" line when another thread's call came in between (counted above).
      if (/= 0\s*$/.test(rest)) {
        order.walSyncs++;
        unsynced = false;
      } else if (rest.includes('<unfinished ...>')) {
        walSyncUnfinished = true;
      }
    } else if (target.startsWith('TCP') && WRITE_CALLS.has(call) && rest.includes('HTTP/1.1 2')) {
      order.answers++;
      if (unsynced) {
        order.unsyncedAnswers++;
        order.firstUnsynced ??= line;
      }
    }
  }
  return order;
}
