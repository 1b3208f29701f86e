/**
 * Entry point of the WAL checkpointer's thread (started by wal-checkpointer.ts).
 * It opens its own connection to the database and only checkpoints — it never
 * writes a row, so the gateway's connection stays the file's one writer
 * (writer-lock.ts). In WAL mode SQLite lets a checkpoint run beside the writer.
 *
 * Every `intervalMs`: a PASSIVE checkpoint copies what has been committed into
 * the database file without taking the write lock, so the gateway's commits go
 * on meanwhile. Once the WAL holds `restartPages` frames it gets the WAL started
 * over (`startOver` below). A failed checkpoint loses nothing: the frames stay in
 * the WAL for the next one (docs/operating.md, "The WAL on SQLite").
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

export interface CheckpointWorkerData {
  path: string;
  synchronous: 'NORMAL' | 'FULL';
  intervalMs: number;
  restartPages: number;
  busyTimeoutMs: number;
}

/** What `PRAGMA wal_checkpoint` answers: frames in the WAL, and how many are in the database file. */
interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

const port = parentPort;
if (!port) throw new Error('wal-checkpoint-worker.js runs only as a worker thread');
const options = workerData as CheckpointWorkerData;

const db = new Database(options.path, { fileMustExist: true, timeout: options.busyTimeoutMs });
// A checkpoint's fsyncs follow this connection's setting: the same as the gateway's,
// so the database file is as durable as the WAL frames it replaces.
db.pragma(`synchronous = ${options.synchronous}`);
const checkpoint = (mode: 'PASSIVE' | 'RESTART' | 'TRUNCATE') =>
  (db.pragma(`wal_checkpoint(${mode})`) as CheckpointResult[])[0] as CheckpointResult;

/** How long the thread keeps copying while waiting for a commit to start the WAL over... */
const CATCH_UP_MS = 150;
/** ...and how long it sleeps between those passes, not to spin a core. */
const PASS_PAUSE_MS = 1;
const pause = new Int32Array(new SharedArrayBuffer(4));

let timer: NodeJS.Timeout | undefined;
function tick(): void {
  try {
    const passive = checkpoint('PASSIVE');
    if (passive.log >= options.restartPages) startOver(passive);
  } catch (error) {
    // SQLITE_BUSY and the like: nothing was lost, the next tick tries again.
    port?.postMessage({ kind: 'error', message: (error as Error).message });
  }
  timer = setTimeout(tick, options.intervalMs);
}

/**
 * The gateway's next commit starts the WAL over by itself when it finds every frame
 * already copied: SQLite does that without a lock of ours. Between two group commits
 * the WAL is still for a few milliseconds, so short PASSIVE passes catch up there,
 * and no commit waits. Only if none managed within CATCH_UP_MS did a RESTART
 * checkpoint force it — it holds the write lock while it copies and fsyncs, which
 * the gateway's commit then waits out (a few ms).
 */
function startOver(first: CheckpointResult): void {
  let last = first;
  const deadline = performance.now() + CATCH_UP_MS;
  while (performance.now() < deadline) {
    Atomics.wait(pause, 0, 0, PASS_PAUSE_MS);
    const next = checkpoint('PASSIVE');
    if (next.log < last.log) return; // fewer frames than before: the WAL started over
    last = next;
  }
  checkpoint('RESTART');
}

port.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearTimeout(timer);
  // Copies the rest and empties the WAL file, so that its size says again how much the gateway
  // wrote since (checkpoints-on-demand.ts). Busy — a commit under way — it is left as it is.
  try {
    checkpoint('TRUNCATE');
  } catch {}
  db.close();
  port.close(); // nothing left to keep the thread alive: it exits
});
timer = setTimeout(tick, options.intervalMs);
