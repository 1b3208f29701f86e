/**
 * The engines' shared stop discipline (src/loops/in-flight.ts) on the manual
 * clock: work in flight is waited for up to the grace period, then aborted and
 * waited for again; nothing is left tracked.
 */
import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/loops/in-flight.js';
import { ManualClock } from '../helpers/manual-clock.js';

/** A task that ends when told to, or when its signal aborts (recording the reason). */
function controllable() {
  let finish = () => {};
  const seen: { reason?: unknown } = {};
  const task = (signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      finish = resolve;
      signal.addEventListener('abort', () => {
        seen.reason = signal.reason;
        resolve();
      });
    });
  return { task, finish: () => finish(), seen };
}

describe('InFlight', () => {
  it('tracks a task from its start until it settles, rejected or not', async () => {
    const work = new InFlight(new ManualClock());
    const a = controllable();
    const done = work.track('a', a.task);
    const failed = work.track('b', async () => {
      throw new Error('the task reports this itself');
    });
    expect(work.has('a')).toBe(true);
    await failed;
    expect(work.keys()).toEqual(['a']);
    a.finish();
    await done;
    expect(work.size).toBe(0);
  });

  it('keeps what the engine says about each piece of work while it runs', async () => {
    const work = new InFlight<{ lane: string }>(new ManualClock());
    const a = controllable();
    const done = work.track('a', a.task, { lane: 'telegram:1' });
    expect(work.abouts()).toEqual([{ lane: 'telegram:1' }]);
    a.finish();
    await done;
    expect(work.abouts()).toEqual([]);
  });

  it('refuses a key that is already in flight', () => {
    const work = new InFlight(new ManualClock());
    work.track('a', controllable().task);
    expect(() => work.track('a', controllable().task)).toThrow(/already in flight: a/);
  });

  it('counts a task that throws before returning a promise as settled', async () => {
    const work = new InFlight(new ManualClock());
    await work.track('a', () => {
      throw new Error('synchronous');
    });
    expect(work.size).toBe(0);
  });

  it('drain: work that finishes within the grace is not aborted', async () => {
    const clock = new ManualClock();
    const work = new InFlight(clock);
    const a = controllable();
    work.track('a', a.task);
    let result: string | undefined;
    const draining = work.drain(5_000, new Error('stop')).then((r) => {
      result = r;
    });
    await clock.advance(4_000);
    expect(result).toBeUndefined();
    a.finish();
    await draining;
    expect(result).toBe('finished');
    expect(a.seen.reason).toBeUndefined();
    expect(clock.pending).toBe(0); // the grace timer is cancelled
  });

  it('drain: past the grace, what is left is aborted with the reason and waited for', async () => {
    const clock = new ManualClock();
    const work = new InFlight(clock);
    const quick = controllable();
    const slow = controllable();
    work.track('quick', quick.task);
    work.track('slow', slow.task);
    const reason = new Error('the gateway is stopping');
    let result: string | undefined;
    const draining = work.drain(5_000, reason).then((r) => {
      result = r;
    });
    quick.finish();
    await clock.advance(4_999);
    expect(result).toBeUndefined();
    expect(work.keys()).toEqual(['slow']);
    await clock.advance(1);
    await draining;
    expect(result).toBe('aborted');
    expect(slow.seen.reason).toBe(reason);
    expect(quick.seen.reason).toBeUndefined();
    expect(work.size).toBe(0);
  });

  it('drain: also waits for work tracked while it waits', async () => {
    const clock = new ManualClock();
    const work = new InFlight(clock);
    const first = controllable();
    const second = controllable();
    work.track('first', first.task);
    let result: string | undefined;
    const draining = work.drain(5_000).then((r) => {
      result = r;
    });
    work.track('second', second.task);
    first.finish();
    await clock.advance(1_000);
    expect(result).toBeUndefined();
    second.finish();
    await draining;
    expect(result).toBe('finished');
  });

  it('drain with no grace aborts at once, arming no timer', async () => {
    const clock = new ManualClock();
    const work = new InFlight(clock);
    const a = controllable();
    work.track('a', a.task);
    expect(await work.drain(0, 'now')).toBe('aborted');
    expect(a.seen.reason).toBe('now');
    expect(clock.pending).toBe(0);
  });

  it('drain with nothing in flight settles at once, arming no timer', async () => {
    const clock = new ManualClock();
    expect(await new InFlight(clock).drain(5_000)).toBe('finished');
    expect(clock.pending).toBe(0);
  });
});
