/**
 * The commit check behind /readyz (src/server/commit-check.ts), on a manual
 * clock: the probe writes at most once per interval however often it is asked
 * (so an unauthenticated caller cannot drive writes), concurrent asks share one
 * probe, a failed write answers at once and a later successful probe clears it.
 * test/server/readyz.test.ts drives the same over HTTP against real stores.
 */
import { describe, expect, it } from 'vitest';
import { CommitCheck } from '../../src/server/commit-check.js';

function setup(interval = 1000) {
  let now = 10_000;
  let failWith: string | undefined;
  /** While set, a probe waits for it before settling. */
  let gate: Promise<void> | undefined;
  const probes: number[] = [];
  const check = new CommitCheck(
    async (at) => {
      probes.push(at);
      await gate;
      if (failWith) throw new Error(failWith);
    },
    interval,
    () => now,
  );
  return {
    check,
    probes,
    advance: (ms: number) => {
      now += ms;
    },
    fail: (message: string | undefined) => {
      failWith = message;
    },
    /** Holds the next probes open until the returned function is called. */
    hold: () => {
      let open = () => {};
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      return () => {
        gate = undefined;
        open();
      };
    },
  };
}

describe('CommitCheck', () => {
  it('probes at most once per interval, and concurrent asks share one probe', async () => {
    const t = setup();
    const answers = await Promise.all(Array.from({ length: 50 }, () => t.check.problem()));
    expect(answers.every((a) => a === undefined)).toBe(true);
    expect(t.probes).toHaveLength(1);
    for (let i = 0; i < 100; i++) await t.check.problem();
    t.advance(999);
    await t.check.problem();
    expect(t.probes).toHaveLength(1);
    t.advance(1);
    await t.check.problem();
    expect(t.probes).toHaveLength(2);
  });

  it('answers a failed write at once, then lets the next probe decide', async () => {
    const t = setup();
    expect(await t.check.problem()).toBeUndefined();
    t.check.writeFailed(new Error('store unavailable: database or disk is full'));
    expect(await t.check.problem()).toContain('a write failed: store unavailable: database or disk is full');
    expect(t.probes).toHaveLength(1);
    // The store is still failing: the probe says so, once per interval.
    t.fail('store unavailable: database or disk is full');
    t.advance(1000);
    expect(await t.check.problem()).toBe('store unavailable: database or disk is full');
    expect(await t.check.problem()).toBe('store unavailable: database or disk is full');
    expect(t.probes).toHaveLength(2);
    // Room again: the next probe commits, with no write needed to tell it.
    t.fail(undefined);
    t.advance(1000);
    expect(await t.check.problem()).toBeUndefined();
    expect(t.probes).toHaveLength(3);
  });

  it('keeps a write failure that came while a probe was committing', async () => {
    const t = setup();
    const open = t.hold();
    const pending = t.check.problem();
    t.check.writeFailed(new Error('store unavailable: disk I/O error'));
    open();
    expect(await pending).toContain('a write failed');
    expect(await t.check.problem()).toContain('a write failed');
  });
});
