/** Messages between the gateway (transform-pool.ts) and a transform worker (transform-worker.ts). */
import type { TransformAction, TransformInput } from './transform-action.js';
import type { BoardMemory } from './transform-board.js';

/** `workerData` of a transform worker. */
export interface WorkerSpec {
  /** The real path of the module, already checked to lie inside the transforms directory. */
  file: string;
  /** The module as the config names it, for error messages. */
  module: string;
  exportName: string | undefined;
}

/** What the worker is started with: the module, and the board its calls are claimed on. */
export interface WorkerData extends WorkerSpec {
  board: BoardMemory;
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
}

/** The worker's first message: whether the module loaded and has a usable export. */
export type LoadReply = { loaded: true } | { loaded: false; error: SerializedError };

export interface CallRequest {
  /** The call's seq on the board. */
  id: number;
  /** Its cell on the board. */
  cell: number;
  input: TransformInput;
}

export type CallReply =
  | { id: number; action: TransformAction | null; error?: undefined }
  | { id: number; error: SerializedError };
