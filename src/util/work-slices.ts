/**
 * Long CPU-bound passes written once, run two ways (docs/untrusted-content.md, "Cost").
 *
 * A pass is a generator that yields every few thousand units of its work and
 * returns its result. `runToEnd` runs it at once, for the small inputs nearly
 * every call has; `runInSlices` runs it in slices of a few milliseconds and
 * hands the event loop back between them (`setImmediate`: the I/O that arrived
 * during the slice is served first), so a pass over megabytes never holds the
 * gateway's requests for more than a slice.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** A pass: yields between pieces of its work, returns its result. */
export type Work<T> = Generator<void, T, void>;

/** Runs `work` to its end without yielding to the event loop. */
export function runToEnd<T>(work: Work<T>): T {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
  }
}

/** How long a slice runs before the event loop gets its turn. */
export const SLICE_MS = 4;

export interface SliceOptions {
  /** Stops the pass at its next yield with the signal's reason. */
  signal?: AbortSignal;
  sliceMs?: number;
  /** Told after each slice (tests count them). */
  onSlice?: () => void;
}

/** Runs `work` in slices of about `sliceMs`, letting the event loop run between them. */
export async function runInSlices<T>(work: Work<T>, options: SliceOptions = {}): Promise<T> {
  const sliceMs = options.sliceMs ?? SLICE_MS;
  const { signal } = options;
  try {
    for (;;) {
      signal?.throwIfAborted();
      const until = performance.now() + sliceMs;
      do {
        const step = work.next();
        if (step.done) return step.value;
      } while (performance.now() < until);
      options.onSlice?.();
      await nextTurn();
    }
  } finally {
    // An abort or a throw leaves the pass suspended: close it, so its `finally` blocks run.
    work.return(undefined as T);
  }
}
