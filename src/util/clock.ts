/**
 * A sense of time that can be injected, so components that wait (the run
 * worker, the heartbeat scheduler, the delivery engine) are tested on a
 * manual clock instead of sleeping through real timeouts and polls.
 */
export interface Clock {
  now(): number;
  /** Calls `fn` once after `ms`; the returned function cancels it. Never keeps the process alive. */
  setTimeout(fn: () => void, ms: number): () => void;
  /** Calls `fn` every `ms`; the returned function stops it. Never keeps the process alive. */
  setInterval(fn: () => void, ms: number): () => void;
}

/** The part of a clock that engines waiting on one-shot timers need (delivery, callbacks). */
export type TimerClock = Pick<Clock, 'now' | 'setTimeout'>;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
  setInterval(fn, ms) {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};
