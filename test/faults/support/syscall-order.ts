/**
 * Reads an `strace -f -y -s <big>` log of the gateway and checks the order that
 * makes a 2xx survive power loss: each answer `HTTP/1.1 2…` carrying an
 * `eventId`/`runId` is written to a socket only after a sync (fdatasync/fsync)
 * of the WAL that *started after* the first WAL write holding that id (its
 * commit's frames) and *returned before* the answer. Any thread's sync counts
 * (the gateway syncs on libuv's thread pool); strace writes its log in the order
 * the calls happen, a call split by another thread's as `<unfinished ...>` and
 * `<... resumed>`, so line numbers order the events.
 */

export interface SyscallOrder {
  /** 2xx answers with an id seen on TCP sockets. */
  answers: number;
  walWrites: number;
  walSyncs: number;
  /** Answers whose commit no WAL write in the log holds (should be 0: a truncated log). */
  commitNotSeen: number;
  /** Answers written before a sync covering their commit had returned. */
  unsyncedAnswers: number;
  /** The first such answer, to show in a failure. */
  firstUnsynced?: string;
}

/** `pid call(fd<path>, rest` — a call's entry (and, when not split, its exit). */
const ENTRY = /^(\d+)\s+(\w+)\((\d+)<([^>]*)>(.*)$/;
/** `pid <... call resumed>rest` — the exit of a split call. */
const RESUMED = /^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$/;
const WRITES = new Set(['write', 'writev', 'pwrite64', 'pwritev', 'pwritev2', 'sendto', 'sendmsg']);
const SYNCS = new Set(['fdatasync', 'fsync']);
/** In strace's quoting: `\"eventId\":\"evt_…\"`. */
const ANSWER_ID = /\\"(?:eventId|runId)\\":\\"([^"\\]+)\\"/;
/** The ids the gateway mints (`evt_`/`run_` and a UUID), as they appear in a WAL frame. */
const STORED_ID = /(?:evt|run)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

interface Sync {
  startLine: number;
  endLine: number;
}

/** What a log holds, each event with its line number. */
function readLog(log: string) {
  let walWrites = 0;
  /** The first WAL write that holds each id: its commit's frames. */
  const firstWrite = new Map<string, number>();
  const syncs: Sync[] = [];
  const answers: { line: number; id: string; text: string }[] = [];
  const splitSyncs = new Map<string, number>(); // pid → start line of its split sync
  const lines = log.split('\n');
  for (const [index, line] of lines.entries()) {
    const resumed = RESUMED.exec(line);
    if (resumed) {
      const [, pid, call, rest] = resumed as unknown as [string, string, string, string];
      const start = splitSyncs.get(pid);
      if (SYNCS.has(call) && start !== undefined) {
        splitSyncs.delete(pid);
        if (/= 0\s*$/.test(rest)) syncs.push({ startLine: start, endLine: index });
      }
      continue;
    }
    const entry = ENTRY.exec(line);
    if (!entry) continue;
    const [, pid, call, , target, rest] = entry as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    if (target.endsWith('-wal') && WRITES.has(call)) {
      walWrites++;
      for (const [id] of rest.matchAll(STORED_ID)) if (!firstWrite.has(id)) firstWrite.set(id, index);
    } else if (target.endsWith('-wal') && SYNCS.has(call)) {
      if (rest.includes('<unfinished ...>')) splitSyncs.set(pid, index);
      else if (/= 0\s*$/.test(rest)) syncs.push({ startLine: index, endLine: index });
    } else if (target.startsWith('socket:') && WRITES.has(call) && rest.includes('HTTP/1.1 2')) {
      const id = ANSWER_ID.exec(rest)?.[1];
      if (id) answers.push({ line: index, id, text: line.slice(0, 200) });
    }
  }
  return { walWrites, firstWrite, syncs, answers };
}

export function checkSyscallOrder(log: string): SyscallOrder {
  const { walWrites, firstWrite, syncs, answers } = readLog(log);
  const order: SyscallOrder = {
    answers: answers.length,
    walWrites,
    walSyncs: syncs.length,
    commitNotSeen: 0,
    unsyncedAnswers: 0,
  };
  for (const answer of answers) {
    const commitLine = firstWrite.get(answer.id);
    if (commitLine === undefined || commitLine > answer.line) {
      order.commitNotSeen++;
      continue;
    }
    const covered = syncs.some((sync) => sync.startLine > commitLine && sync.endLine < answer.line);
    if (!covered) {
      order.unsyncedAnswers++;
      order.firstUnsynced ??= answer.text;
    }
  }
  return order;
}
