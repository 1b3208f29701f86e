/**
 * Calls a function once a burst of triggers is over: after `quietMs` without a
 * trigger, or `maxWaitMs` after the first trigger not yet acted on, whichever
 * comes first. The bound matters for a burst that never ends (a file written
 * continuously): a plain quiet-period debounce would never fire while it lasts.
 */
import { systemClock, type TimerClock } from '../util/clock.js';

export interface DebounceTimes {
  quietMs: number;
  maxWaitMs: number;
}

export interface Debounced {
  /** One more trigger. */
  (): void;
  /** Forgets the triggers not yet acted on. */
  cancel(): void;
}

export function debounce(fn: () => void, times: DebounceTimes, clock: TimerClock = systemClock): Debounced {
  let cancelQuiet: (() => void) | undefined;
  let cancelMax: (() => void) | undefined;
  const cancel = () => {
    cancelQuiet?.();
    cancelMax?.();
    cancelQuiet = undefined;
    cancelMax = undefined;
  };
  const fire = () => {
    cancel();
    fn();
  };
  const trigger = () => {
    cancelQuiet?.();
    cancelQuiet = clock.setTimeout(fire, times.quietMs);
    cancelMax ??= clock.setTimeout(fire, times.maxWaitMs);
  };
  return Object.assign(trigger, { cancel });
}
