/**
 * Entry point of the WAL checkpointer's thread (started by wal-checkpointer.ts).
 * It opens its own connection to the database and only checkpoints — it never
 * writes a row, so the gateway's connection stays the file's one writer
 * (writer-lock.ts). In WAL mode SQLite lets a checkpoint run beside the writer.
 *
 * Every `intervalMs`: a PASSIVE checkpoint copies what has been committed into
 * the database file without taking the write lock, so the gateway's commits go
 * on meanwhile. Once the WAL holds `restartPages` frames, a RESTART follows: it
 * takes the write lock just long enough to copy the few frames committed since
 * the PASSIVE one, so the gateway's next commit writes the WAL from its start
 * again. If the lock or a reader is not free within `busyTimeoutMs`, it gives
 * up and tries again next time (docs/operating.md, "Size on SQLite").
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
const checkpoint = (mode: 'PASSIVE' | 'RESTART') =>
  (db.pragma(`wal_checkpoint(${mode})`) as CheckpointResult[])[0] as CheckpointResult;

/** At most this many PASSIVE passes to catch up before a RESTART... */
const CATCH_UP_PASSES = 4;
/** ...stopping at one this short: what it left for RESTART is as little. */
const CAUGHT_UP_MS = 5;

let timer: NodeJS.Timeout | undefined;
function tick(): void {
  try {
    if (checkpoint('PASSIVE').log >= options.restartPages) {
      // RESTART holds the write lock while it copies: first let PASSIVE ones copy all
      // but what the gateway commits meanwhile, so the lock is held for a moment only.
      for (let i = 0; i < CATCH_UP_PASSES; i++) {
        const started = performance.now();
        checkpoint('PASSIVE');
        if (performance.now() - started < CAUGHT_UP_MS) break;
      }
      checkpoint('RESTART');
    }
  } catch (error) {
    // SQLITE_BUSY and the like: nothing was lost, the next tick tries again.
    port?.postMessage({ kind: 'error', message: (error as Error).message });
  }
  timer = setTimeout(tick, options.intervalMs);
}

port.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearTimeout(timer);
  db.close();
  port.close(); // nothing left to keep the thread alive: it exits
});
timer = setTimeout(tick, options.intervalMs);
