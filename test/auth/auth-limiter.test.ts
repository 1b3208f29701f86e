/**
 * The auth-failure limiter on an injected clock: the counting of docs/authentication.md (20 failures / 60 s → 60 s lockout), and the bounds of
 * docs/authentication.md, "Two tables" — a lock is never shed before it ends,
 * counted addresses are shed least recent first, IPv6 is counted by /64, and a
 * full table of locks degrades to "not locked" with one report rather than to
 * shedding a lock or refusing everyone.
 */
import { describe, expect, it } from 'vitest';
import { addressKey, MAX_KEY_LENGTH } from '../../src/auth/address-key.js';
import { AuthFailureLimiter, type LimiterOptions } from '../../src/auth/auth-limiter.js';
import { refuseAuthFailure } from '../../src/auth/guards.js';
import type { Logger } from '../../src/log.js';

class FakeClock {
  constructor(public ms = 1_700_000_000_000) {}
  readonly now = () => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

function limiterWith(options: Partial<LimiterOptions> = {}) {
  const clock = new FakeClock();
  return { clock, limiter: new AuthFailureLimiter(options, clock.now) };
}

/** `count` failures from `address`; returns the outcome of each. */
function failTimes(limiter: AuthFailureLimiter, address: string, count: number) {
  return Array.from({ length: count }, () => limiter.fail(address));
}

describe('counting', () => {
  it('locks on the 20th failure within 60 s, for 60 s, with a Retry-After that counts down', () => {
    const { clock, limiter } = limiterWith();
    const outcomes = failTimes(limiter, '198.51.100.1', 20);
    expect(outcomes.slice(0, 19)).toEqual(Array(19).fill('counted'));
    expect(outcomes[19]).toBe('locked');
    expect(limiter.check('198.51.100.1')).toEqual({ locked: true, retryAfterSeconds: 60 });
    clock.advance(59_500);
    expect(limiter.check('198.51.100.1')).toEqual({ locked: true, retryAfterSeconds: 1 });
    clock.advance(500);
    expect(limiter.check('198.51.100.1')).toEqual({ locked: false });
    // The lock reset the count: 19 more failures do not lock again.
    expect(failTimes(limiter, '198.51.100.1', 19)).not.toContain('locked');
    expect(limiter.check('198.51.100.1').locked).toBe(false);
  });

  it('forgets failures older than the window (sliding, not fixed)', () => {
    const { clock, limiter } = limiterWith();
    failTimes(limiter, '198.51.100.2', 10);
    clock.advance(30_000);
    failTimes(limiter, '198.51.100.2', 9);
    clock.advance(30_000); // the first 10 are now exactly 60 s old: out of the window
    expect(failTimes(limiter, '198.51.100.2', 10)).not.toContain('locked');
    expect(limiter.fail('198.51.100.2')).toBe('locked'); // 9 + 11 within the last 60 s
  });

  it('resets the count on a success, but a success never ends a lockout', () => {
    const { limiter } = limiterWith();
    failTimes(limiter, '198.51.100.3', 19);
    limiter.succeed('198.51.100.3');
    expect(failTimes(limiter, '198.51.100.3', 19)).not.toContain('locked');
    expect(limiter.fail('198.51.100.3')).toBe('locked');
    limiter.succeed('198.51.100.3');
    expect(limiter.check('198.51.100.3').locked).toBe(true);
  });

  it('refuses failures that raced past the check, without extending the lock', () => {
    const { clock, limiter } = limiterWith();
    failTimes(limiter, '198.51.100.4', 20);
    clock.advance(30_000);
    expect(failTimes(limiter, '198.51.100.4', 25)).toEqual(Array(25).fill('refused'));
    expect(limiter.check('198.51.100.4')).toEqual({ locked: true, retryAfterSeconds: 30 });
  });
});

describe('bounded memory without washing out a lock', () => {
  it('keeps a lock while 10,050 other addresses fail once each', () => {
    const { clock, limiter } = limiterWith();
    failTimes(limiter, '203.0.113.7', 20);
    for (let i = 0; i < 10_050; i++) {
      limiter.fail(`10.${(i >> 16) & 0xff}.${(i >> 8) & 0xff}.${i & 0xff}`);
      if (i % 1000 === 0) clock.advance(100);
    }
    expect(limiter.check('203.0.113.7').locked).toBe(true);
    expect(limiter.size).toEqual({ counting: 10_000, locked: 1 });
  });

  it('sheds the counted address whose last failure is oldest, not the one that failed again', () => {
    const { clock, limiter } = limiterWith({ maxTracked: 3, maxFailures: 3 });
    limiter.fail('a');
    clock.advance(1);
    limiter.fail('b');
    clock.advance(1);
    limiter.fail('c');
    clock.advance(1);
    limiter.fail('a'); // a is now the most recent
    clock.advance(1);
    limiter.fail('d'); // full: b goes
    expect(limiter.size.counting).toBe(3);
    expect(limiter.fail('a')).toBe('locked'); // a kept both earlier failures
    expect(limiter.fail('b')).toBe('counted'); // b starts over: 1 of 3
    expect(limiter.fail('b')).toBe('counted');
    expect(limiter.fail('b')).toBe('locked');
  });

  it('sheds counted addresses whose failures left the window before any recent one', () => {
    const { clock, limiter } = limiterWith({ maxTracked: 3 });
    limiter.fail('old-1');
    limiter.fail('old-2');
    clock.advance(50_000);
    failTimes(limiter, 'recent', 19);
    clock.advance(10_000); // old-1 and old-2 are now stale, recent is not
    limiter.fail('new');
    expect(limiter.size.counting).toBe(2);
    expect(limiter.fail('recent')).toBe('locked');
  });

  it('never sheds a lock to make room: a full table of locks stops recording new ones and says so once a minute', () => {
    const { clock, limiter } = limiterWith({ maxTracked: 10, maxLocked: 3, maxFailures: 2 });
    for (const address of ['x1', 'x2', 'x3']) expect(failTimes(limiter, address, 2)[1]).toBe('locked');
    expect(failTimes(limiter, 'y', 2)).toEqual(['counted', 'overflow']);
    expect(limiter.check('y').locked).toBe(false);
    expect(failTimes(limiter, 'y', 3)).toEqual(['counted', 'counted', 'counted']); // reported once
    expect(failTimes(limiter, 'z', 2)).toEqual(['counted', 'counted']);
    for (const address of ['x1', 'x2', 'x3']) expect(limiter.check(address).locked).toBe(true);
    expect(limiter.size).toEqual({ counting: 2, locked: 3 });

    clock.advance(30_000);
    limiter.fail('z');
    expect(limiter.check('z').locked).toBe(false); // still full
    clock.advance(30_000); // the three locks end; y and z may be locked again
    expect(limiter.fail('y')).toBe('counted'); // its earlier failures left the window
    expect(limiter.fail('y')).toBe('locked');
    expect(limiter.check('y').locked).toBe(true);
    for (const address of ['x1', 'x2', 'x3']) expect(limiter.check(address).locked).toBe(false);
  });

  it('reports a persisting overflow again after a lockout period', () => {
    const { clock, limiter } = limiterWith({ maxLocked: 1, maxFailures: 1, lockoutMs: 60_000 });
    expect(limiter.fail('x')).toBe('locked');
    expect(limiter.fail('y')).toBe('overflow');
    clock.advance(59_999);
    expect(limiter.fail('z')).toBe('counted');
    clock.advance(1); // x's lock ends at this very moment, so z is locked instead
    expect(limiter.fail('z')).toBe('locked');
    expect(limiter.fail('w')).toBe('overflow');
  });

  it('has the guards warn once when a lock begins and once when the lock table overflows', async () => {
    const { limiter } = limiterWith({ maxLocked: 1, maxFailures: 2 });
    const warnings: unknown[][] = [];
    const log = { warn: (...args: unknown[]) => warnings.push(args) } as unknown as Logger;
    const statuses: number[] = [];
    const unauthorized = Object.assign(new Error('wrong token'), { statusCode: 401 });
    for (const address of ['198.51.100.1', '198.51.100.1', '198.51.100.1', '198.51.100.2', '198.51.100.2']) {
      const refusal = await refuseAuthFailure(limiter, address, unauthorized, log).catch((error) => error);
      statuses.push(refusal.statusCode);
    }
    // The third failure of .1 raced past a check made before its lock: refused, not counted.
    expect(statuses).toEqual([401, 401, 429, 401, 401]);
    expect(warnings).toEqual([
      [{ client: '198.51.100.1' }, expect.stringMatching(/locked out/)],
      [{ client: '198.51.100.2' }, expect.stringMatching(/table of locked-out addresses is full/)],
    ]);
  });

  it('sweep drops stale counts and ended locks', () => {
    const { clock, limiter } = limiterWith();
    failTimes(limiter, 'locked', 20);
    failTimes(limiter, 'counted', 5);
    clock.advance(59_999);
    limiter.sweep();
    expect(limiter.size).toEqual({ counting: 1, locked: 1 });
    clock.advance(1);
    limiter.sweep();
    expect(limiter.size).toEqual({ counting: 0, locked: 0 });
  });
});

describe('IPv6 is counted by /64', () => {
  it('locks the whole /64 of an address that failed from many interface ids', () => {
    const { limiter } = limiterWith();
    for (let i = 0; i < 20; i++) limiter.fail(`2001:db8:1:2:${i.toString(16)}::1`);
    expect(limiter.check('2001:db8:1:2::1').locked).toBe(true);
    expect(limiter.check('2001:DB8:1:2:ffff:ffff:ffff:ffff').locked).toBe(true);
    expect(limiter.check('2001:db8:1:3::1').locked).toBe(false);
    expect(limiter.size).toEqual({ counting: 0, locked: 1 });
  });

  it('keeps one entry for a million addresses of one /64', () => {
    const { limiter } = limiterWith({ maxFailures: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 1_000_000; i++) {
      limiter.fail(`2001:db8:77:1:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::`);
    }
    expect(limiter.size).toEqual({ counting: 1, locked: 0 });
  });

  it('counts IPv4-mapped IPv6 as the IPv4 address', () => {
    const { limiter } = limiterWith();
    failTimes(limiter, '::ffff:192.0.2.1', 10);
    failTimes(limiter, '192.0.2.1', 9);
    expect(limiter.fail('::ffff:c000:201')).toBe('locked');
    expect(limiter.check('192.0.2.1').locked).toBe(true);
    expect(limiter.check('::FFFF:192.0.2.1').locked).toBe(true);
  });
});

describe('addressKey', () => {
  it.each([
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:192.0.2.1', '192.0.2.1'],
    ['::ffff:c000:201', '192.0.2.1'],
    ['0:0:0:0:0:ffff:c000:0201', '192.0.2.1'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:0DB8:0000:0000:0001::1', '2001:db8:0:0::/64'],
    ['2001:db8:a:b:c:d:e:f', '2001:db8:a:b::/64'],
    ['2001:db8:a:b::', '2001:db8:a:b::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    ['::ffff:1234', '0:0:0:0::/64'],
  ])('%s → %s', (address, key) => {
    expect(addressKey(address)).toBe(key);
  });

  it('keeps what is not an address as text, at most MAX_KEY_LENGTH characters', () => {
    expect(addressKey('unknown')).toBe('unknown');
    expect(addressKey('1:2:3:4:5:6:7:8:9')).toBe('1:2:3:4:5:6:7:8:9');
    expect(addressKey('1::2::3')).toBe('1::2::3');
    expect(addressKey('x'.repeat(500))).toHaveLength(MAX_KEY_LENGTH);
    expect(addressKey(`2001:db8::${'1:'.repeat(200)}`)).toHaveLength(MAX_KEY_LENGTH);
  });
});
