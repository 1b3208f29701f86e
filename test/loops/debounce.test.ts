/**
 * The debounce of config reloads (src/loops/debounce.ts; docs/configuration.md, "Reload"),
 * on a manual clock: once after a quiet period, and under triggers that never pause, at
 * most the maximum wait after the first one not yet acted on.
 */
import { describe, expect, it } from 'vitest';
import { debounce } from '../../src/loops/debounce.js';
import { ManualClock } from '../helpers/manual-clock.js';

const TIMES = { quietMs: 200, maxWaitMs: 2_000 };

describe('debounce', () => {
  it('fires once, a quiet period after the last trigger of a burst', async () => {
    const clock = new ManualClock();
    const fired: number[] = [];
    const start = clock.now();
    const trigger = debounce(() => fired.push(clock.now() - start), TIMES, clock);
    trigger();
    await clock.advance(150);
    trigger();
    await clock.advance(199);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual([350]);
    await clock.advance(10_000);
    expect(fired).toEqual([350]);
    expect(clock.pending).toBe(0);
  });

  it('under triggers that never pause (201 in 20 s), fires every maximum wait, then once after the last', async () => {
    const clock = new ManualClock();
    const fired: number[] = [];
    const start = clock.now();
    const trigger = debounce(() => fired.push(clock.now() - start), TIMES, clock);
    for (let i = 0; i <= 200; i++) {
      trigger();
      await clock.advance(100);
    }
    await clock.advance(1_000);
    // Every 2 s while the triggers go on (each fire comes before the trigger of its instant,
    // which starts the next wait), then 200 ms after the last trigger, at 20 s.
    expect(fired).toEqual([...Array.from({ length: 10 }, (_, i) => (i + 1) * 2_000), 20_200]);
  });

  it('cancel forgets what was not acted on', async () => {
    const clock = new ManualClock();
    let fired = 0;
    const trigger = debounce(() => fired++, TIMES, clock);
    trigger();
    trigger.cancel();
    await clock.advance(5_000);
    expect(fired).toBe(0);
    expect(clock.pending).toBe(0);
  });
});
