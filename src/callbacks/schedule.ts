/**
 * When a failed callback is tried again (docs/callers.md, "Retries"). The first
 * three retries come within seconds — each at most 25 s after the previous
 * attempt, so a receiver's brief hiccup costs seconds, not minutes — then the
 * wait grows to six hours, and the callback is given up only when the whole
 * schedule has run and at least 24 h passed since it became due. Jitter only
 * lengthens a wait (up to +25 %), so the schedule's sum (31.9 h) stays above
 * 24 h, and receivers that come back from an outage are not hit by every
 * gateway at the same second.
 */

/** Wait before retry n (n = 1 is the first retry), in seconds. */
export const RETRY_DELAYS_S: readonly number[] = [
  5, 10, 20, 60, 300, 900, 1800, 3600, 7200, 14_400, 21_600, 21_600, 21_600, 21_600,
];
export const JITTER = 0.25;
export const MIN_RETRY_WINDOW_MS = 24 * 3600_000;
/** A receiver's Retry-After is honoured up to the longest wait of the schedule. */
export const MAX_DELAY_MS = Math.max(...RETRY_DELAYS_S) * 1000;

/**
 * The wait after `attempts` failed attempts: the receiver's Retry-After when it
 * sent one (at least 1 s, at most MAX_DELAY_MS), else the schedule with jitter.
 */
export function retryDelayMs(
  attempts: number,
  retryAfterMs: number | undefined,
  random: () => number,
): number {
  if (retryAfterMs !== undefined) return Math.min(Math.max(retryAfterMs, 1000), MAX_DELAY_MS);
  const index = Math.min(Math.max(attempts, 1), RETRY_DELAYS_S.length) - 1;
  const base = (RETRY_DELAYS_S[index] as number) * 1000;
  return Math.round(base * (1 + JITTER * random()));
}

/** True once the whole schedule ran (the first attempt and every retry) and the 24 h window is over. */
export function givesUp(attempts: number, armedAt: number, now: number): boolean {
  return attempts > RETRY_DELAYS_S.length && now - armedAt >= MIN_RETRY_WINDOW_MS;
}
