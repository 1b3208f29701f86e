// What the authentication guard costs: the heap taken by the lockout tables at
// their bounds (100,000 locked addresses, 10,000 counted ones with 19 failures
// each, then 50,000 more addresses at the limit, which must not grow anything),
// and the time per call of the per-request steps (best of 9 rounds of 10^6).
//
//   npm run build && node --expose-gc bench/auth-guard.mjs
import { AuthFailureLimiter } from '../dist/auth/auth-limiter.js';
import { queryHasToken } from '../dist/auth/query-token.js';
import { presentedHookToken } from '../dist/auth/token.js';

if (typeof global.gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(1);
}

const heap = () => {
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed;
};
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
/** The i-th address of a family: alternately IPv4 and IPv6 (one /64 each, so longer keys). */
const address = (v4First, v6Prefix, i) =>
  i % 2
    ? `${v6Prefix}:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`
    : `${v4First}.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

function memory() {
  const now = 1_700_000_000_000;
  const base = heap();
  const limiter = new AuthFailureLimiter({}, () => now);
  for (let i = 0; i < 100_000; i++) for (let k = 0; k < 20; k++) limiter.fail(address(10, '2001:db8', i));
  const locked = heap();
  for (let i = 0; i < 10_000; i++) for (let k = 0; k < 19; k++) limiter.fail(address(11, '2001:db9', i));
  const counted = heap();
  for (let i = 0; i < 50_000; i++) for (let k = 0; k < 20; k++) limiter.fail(address(12, '2001:dba', i));
  const beyond = heap();
  console.log(`tables: ${JSON.stringify(limiter.size)}`);
  console.log(
    `100,000 locked:                     ${mb(locked - base)} (${Math.round((locked - base) / 1e5)} B each)`,
  );
  console.log(
    `10,000 counted, 19 failures each:   ${mb(counted - locked)} (${Math.round((counted - locked) / 1e4)} B each)`,
  );
  console.log(`after 50,000 more at the limit:     ${mb(beyond - base)} in all`);
}

function perCall(name, fn) {
  let best = Number.POSITIVE_INFINITY;
  let sink = 0;
  for (let round = 0; round < 9; round++) {
    const n = 1_000_000;
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink += fn() ? 1 : 0;
    best = Math.min(best, Number(process.hrtime.bigint() - start) / n);
  }
  console.log(`${name.padEnd(52)} ${best.toFixed(1)} ns${sink < 0 ? '!' : ''}`);
}

function timing() {
  const rawHeaders = [
    'Host',
    '127.0.0.1:18790',
    'User-Agent',
    'curl/8.5.0',
    'Accept',
    '*/*',
    'Authorization',
    'Bearer hook-token-0123456789abcdef0123456789',
    'Content-Type',
    'application/json',
    'Content-Length',
    '17',
  ];
  perCall('presentedHookToken (6 headers, Bearer)', () => presentedHookToken(rawHeaders));
  perCall('queryHasToken (no query)', () => queryHasToken('/hooks/agent'));
  perCall('queryHasToken (?source=ci&build=812)', () => queryHasToken('/hooks/agent?source=ci&build=812'));
  const quiet = new AuthFailureLimiter();
  perCall('limiter check+succeed, nothing tracked', () => {
    quiet.check('198.51.100.1');
    quiet.succeed('198.51.100.1');
    return true;
  });
  const busy = new AuthFailureLimiter();
  for (let i = 0; i < 20; i++) busy.fail('203.0.113.1');
  for (let i = 0; i < 5; i++) busy.fail('203.0.113.2');
  perCall('limiter check+succeed, tables in use, IPv4', () => {
    busy.check('198.51.100.1');
    busy.succeed('198.51.100.1');
    return true;
  });
  let turn = 0;
  perCall('limiter check+succeed, tables in use, IPv6 (2 clients)', () => {
    const client = turn++ & 1 ? '2001:db8:1:2::3' : '2001:db8:9:2::3';
    busy.check(client);
    busy.succeed(client);
    return true;
  });
}

memory();
timing();
