/**
 * Entry point of a transform worker thread (started by transform-pool.ts). It
 * imports one transform module once, says whether that worked, then serves
 * calls in the order they arrive: `{id, input}` in, `{id, action}` or
 * `{id, error}` out. Several may be sent ahead (an async transform overlaps them).
 *
 * The gateway stops this thread from outside (Worker.terminate) when a call
 * overruns its deadline, so nothing here needs to police time.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type TransformInput, validateAction } from './transform-action.js';
import { CallBoard } from './transform-board.js';
import { importTransformModule } from './transform-module.js';
import type { CallReply, CallRequest, LoadReply, WorkerData } from './transform-protocol.js';

const port = parentPort;
if (!port) throw new Error('transform-worker.js runs only as a worker thread');
const spec = workerData as WorkerData;
const board = new CallBoard(spec.board);

function errorReply(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { name: 'Error', message: `transform threw a non-error value: ${String(error)}` };
}

try {
  const transform = await importTransformModule(spec.file, spec.module, spec.exportName);
  port.on('message', async ({ id, cell, input }: CallRequest) => {
    // The gateway may have withdrawn this call while it waited here (handed to another
    // worker after an earlier call overran): then it must not run at all.
    if (!board.start(cell, id)) return;
    let reply: CallReply;
    try {
      // validateAction copies known, typed fields into a fresh plain object: what is
      // posted back can always be cloned, and carries nothing but the action.
      reply = { id, action: validateAction(await transform(input as TransformInput)) };
    } catch (error) {
      reply = { id, error: errorReply(error) };
    }
    port.postMessage(reply);
  });
  port.postMessage({ loaded: true } satisfies LoadReply);
} catch (error) {
  port.postMessage({ loaded: false, error: errorReply(error) } satisfies LoadReply);
}
