/**
 * Runs SQLite WAL checkpoints on a worker thread with its own connection.
 *
 * A checkpoint copies committed pages from the WAL into the database file and
 * fsyncs it. Left to SQLite's automatic checkpoint, that work (fsync included)
 * lands inside whichever request's commit crosses the threshold, stalling the
 * event loop. A PASSIVE checkpoint from another connection never blocks the
 * writer, so the request path only ever appends to the WAL. If the worker dies,
 * the main connection falls back to automatic checkpoints.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 5000');
const checkpoint = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (error) { parentPort.postMessage(String(error)); }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  stop(): Promise<void>;
}

export function startCheckpointer(
  path: string,
  intervalMs: number,
  onFailure: (reason: string) => void,
): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, intervalMs, driver } });
  worker.unref();
  let stopped = false;
  let exited = false;
  let stopping: Promise<void> | undefined;
  worker.on('message', (message: string) => onFailure(`checkpoint failed: ${message}`));
  worker.on('error', (error) => onFailure(`checkpoint worker crashed: ${error.message}`));
  worker.on('exit', (code) => {
    exited = true;
    if (!stopped) onFailure(`checkpoint worker exited (${code})`);
  });
  return {
    // Idempotent; resolves at once when the worker is already gone.
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        stopped = true;
        if (exited) return resolve();
        worker.once('exit', () => resolve());
        // Keep the process alive until the worker has exited, or a caller awaiting
        // this (e.g. `run` failing to listen) sees the event loop drain first.
        worker.ref();
        worker.postMessage('stop');
      })),
  };
}
