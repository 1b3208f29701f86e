/**
 * The delivery engine's sense of time, injectable so its tests run on a manual
 * clock instead of waiting on real backoffs and polls.
 */
export interface Clock {
  now(): number;
  /** Calls `fn` once after `ms`; the returned function cancels it. Never keeps the process alive. */
  setTimeout(fn: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
