/**
 * The background loops' base (src/loops/; docs/architecture.md, "Background
 * loops") on the manual clock: a scan loop wakes on its poll, on `notify`, on
 * the commits it listens to and at `wakeBy`, never runs two scans at once, and
 * stops listening when it stops; `stopWithGrace` gives the work in flight its
 * grace from the moment of the stop.
 */
import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/loops/in-flight.js';
import { ScanLoop } from '../../src/loops/scan-loop.js';
import { stopWithGrace } from '../../src/loops/stop-with-grace.js';
import { LocalCommits } from '../../src/store/committed.js';
import { ManualClock } from '../helpers/manual-clock.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A scan that counts its runs and, while `hold` is set, waits for it to be released. */
function counter() {
  let release: () => void = () => {};
  const state = {
    scans: 0,
    running: 0,
    maxRunning: 0,
    hold: false,
    release: () => release(),
    scan: async () => {
      state.scans++;
      state.running++;
      state.maxRunning = Math.max(state.maxRunning, state.running);
      if (state.hold) await new Promise<void>((resolve) => (release = resolve));
      state.running--;
    },
  };
  return state;
}

describe('ScanLoop', () => {
  it('scans at start and every poll, and at once when notified', async () => {
    const clock = new ManualClock();
    const c = counter();
    const loop = new ScanLoop(c.scan, clock, 1000);
    loop.start();
    expect(c.scans).toBe(1);
    await clock.advance(999);
    expect(c.scans).toBe(1);
    await clock.advance(1);
    expect(c.scans).toBe(2);
    loop.notify();
    expect(c.scans).toBe(3);
    await loop.stop();
    await clock.advance(5000);
    loop.notify();
    expect(c.scans).toBe(3);
  });

  it('a burst of notifications during a scan costs one more scan, never two at once', async () => {
    const clock = new ManualClock();
    const c = counter();
    const loop = new ScanLoop(c.scan, clock, 60_000);
    c.hold = true;
    loop.start();
    for (let i = 0; i < 10; i++) loop.notify();
    c.hold = false;
    c.release();
    await tick();
    await tick();
    expect(c.scans).toBe(2);
    expect(c.maxRunning).toBe(1);
    await loop.stop();
  });

  it('wakes on the commits of its kinds while started, and not after it stopped', async () => {
    const clock = new ManualClock();
    const commits = new LocalCommits();
    const c = counter();
    const loop = new ScanLoop(c.scan, clock, 60_000, { wakeOn: { signal: commits, kinds: ['outbox'] } });
    commits.emit('outbox');
    expect(c.scans).toBe(0); // not started: not listening
    loop.start();
    await tick();
    commits.emit('callbacks');
    commits.emit('outbox');
    expect(c.scans).toBe(2);
    await loop.stop();
    commits.emit('outbox');
    expect(c.scans).toBe(2);
  });

  it('deferred: the notifications of one turn cost one scan, on the next turn', async () => {
    const clock = new ManualClock();
    const c = counter();
    const loop = new ScanLoop(c.scan, clock, 60_000, { deferred: true, scanAtStart: false });
    loop.start();
    for (let i = 0; i < 5; i++) loop.notify();
    expect(c.scans).toBe(0);
    await tick();
    await tick();
    await tick();
    expect(c.scans).toBe(1);
    await loop.stop();
  });

  it('scanAtStart false: the first scan is one poll after start', async () => {
    const clock = new ManualClock();
    const c = counter();
    const loop = new ScanLoop(c.scan, clock, 1000, { scanAtStart: false });
    loop.start();
    expect(c.scans).toBe(0);
    await clock.advance(1000);
    expect(c.scans).toBe(1);
    await loop.stop();
  });

  it('wakeBy scans at the earliest time asked for, before the poll', async () => {
    const clock = new ManualClock();
    const c = counter();
    const loop = new ScanLoop(c.scan, clock, 60_000);
    loop.start();
    loop.wakeBy(clock.now() + 500);
    loop.wakeBy(clock.now() + 300);
    loop.wakeBy(clock.now() + 900); // later than the one set: ignored
    await clock.advance(300);
    expect(c.scans).toBe(2);
    await clock.advance(700);
    expect(c.scans).toBe(2);
    await loop.stop();
  });
});

describe('stopWithGrace', () => {
  it('starts the grace at the stop, then aborts what is left', async () => {
    const clock = new ManualClock();
    const loop = new ScanLoop(async () => {}, clock, 60_000);
    const work = new InFlight(clock);
    loop.start();
    let aborted: unknown;
    void work.track(
      'w',
      (signal) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => {
            aborted = signal.reason;
            resolve(undefined);
          }),
        ),
    );
    const stopping = stopWithGrace(loop, work, 1000, 'stopping');
    await clock.advance(999);
    expect(aborted).toBeUndefined();
    await clock.advance(1);
    expect(await stopping).toBe('aborted');
    expect(aborted).toBe('stopping');
  });
});
