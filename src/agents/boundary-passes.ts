/**
 * How the safety boundary's long passes run (docs/untrusted-content.md, "Cost"):
 * a short text at once, a long one in slices between which the event loop runs
 * (util/work-slices.ts), and one long pass at a time in the process, so the
 * gateway holds one pass's working memory however many runs start together.
 */
import { runInSlices, runToEnd, type SliceOptions, type Work } from '../util/work-slices.js';

/**
 * Passes over at most this many characters run at once, whatever the caller:
 * a few milliseconds at most, about a slice.
 */
export const AT_ONCE_CHARS = 65_536;

/** The end of the last long pass waiting or running: the next one starts after it. */
let lane: Promise<void> = Promise.resolve();

/**
 * Runs `work`, a pass over about `chars` characters of untrusted text. Long
 * passes wait for the ones before them, in order. Rejects with the signal's
 * reason when it aborts first, waiting or running.
 */
export async function runBoundaryPass<T>(
  chars: number,
  work: Work<T>,
  options: SliceOptions = {},
): Promise<T> {
  options.signal?.throwIfAborted();
  if (chars <= AT_ONCE_CHARS) return runToEnd(work);
  const previous = lane;
  let release = () => {};
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  // The next pass waits for this one and, should this one give up waiting, still for the one before.
  lane = previous.then(() => mine);
  try {
    await untilDone(previous, options.signal);
    return await runInSlices(work, options);
  } finally {
    release();
  }
}

/** Resolves when `work` does, or rejects with the signal's reason when it aborts first. */
function untilDone(work: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return work;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    void work.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
