/**
 * The delivery engine's sense of time: the shared injectable clock
 * (util/clock.ts), of which it needs only `now` and one-shot timers.
 */
import type { Clock as FullClock } from '../util/clock.js';

export type Clock = Pick<FullClock, 'now' | 'setTimeout'>;
export { systemClock } from '../util/clock.js';
