/**
 * The key under which the auth-failure lockout counts a client address.
 *
 * One IPv6 client typically owns a whole /64 (often far more), so counting
 * single IPv6 addresses would let it guess from billions of fresh "clients"
 * and fill the tracker at will: IPv6 is counted by its /64 prefix. IPv4 is
 * counted per address; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a
 * dual-stack socket reports for IPv4 peers) is the IPv4 address it carries.
 * Anything that is not an IP address (a misbehaving proxy's header) is kept
 * as text, cut to a bounded length so a key never costs more than an address.
 */

/** Longest key kept for a non-address string (an IPv6 address in text is at most 45 characters). */
export const MAX_KEY_LENGTH = 64;

const MAPPED_PREFIX = '::ffff:';

export function addressKey(address: string): string {
  // The common cases first, without allocating: plain IPv4, and IPv4 as a dual-stack socket reports it.
  if (address.indexOf(':') === -1) {
    return address.length <= MAX_KEY_LENGTH ? address : address.slice(0, MAX_KEY_LENGTH);
  }
  if (
    address.startsWith(MAPPED_PREFIX) &&
    address.indexOf(':', MAPPED_PREFIX.length) === -1 &&
    address.indexOf('.', MAPPED_PREFIX.length) !== -1
  ) {
    return address.slice(MAPPED_PREFIX.length);
  }
  // A request asks for its key more than once (lockout check, then success or failure).
  if (address === lastAddress) return lastKey;
  lastKey = ipv6Key(address) ?? address.slice(0, MAX_KEY_LENGTH);
  lastAddress = address;
  return lastKey;
}

let lastAddress = '';
let lastKey = '';

/**
 * The eight 16-bit groups of the address being keyed. Reused across calls: the
 * key is computed on every request from an IPv6 client, and a scan into a fixed
 * array costs a fraction of split/regex parsing and allocates nothing.
 */
const groups = new Uint16Array(8);
const COLON = 0x3a;
const DOT = 0x2e;

/** `2001:db8:a:b::/64` for any address in that /64, the IPv4 address for an IPv4-mapped one; undefined if not IPv6. */
function ipv6Key(address: string): string | undefined {
  const zone = address.indexOf('%');
  const end = zone === -1 ? address.length : zone;
  if (end > 45 || !parseIpv6(address, end)) return undefined;
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0) {
    if (groups[5] === 0xffff) {
      const high = groups[6] as number;
      const low = groups[7] as number;
      return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
    }
  }
  return `${hex(0)}:${hex(1)}:${hex(2)}:${hex(3)}::/64`;
}

const hex = (index: number) => (groups[index] as number).toString(16);

/** Fills `groups` from `text[0, end)`; false if that is not an IPv6 address (RFC 4291 §2.2 text forms). */
function parseIpv6(text: string, end: number): boolean {
  let count = 0;
  let gapAt = -1;
  let i = 0;
  if (text.charCodeAt(0) === COLON) {
    if (text.charCodeAt(1) !== COLON) return false;
    gapAt = 0;
    i = 2;
  }
  while (i < end) {
    let value = 0;
    let j = i;
    while (j < end && j - i <= 4) {
      const digit = hexDigit(text.charCodeAt(j));
      if (digit < 0) break;
      value = value * 16 + digit;
      j++;
    }
    if (j < end && text.charCodeAt(j) === DOT) {
      // A dotted IPv4 tail: the last 32 bits.
      const v4 = count <= 6 ? parseIpv4(text, i, end) : -1;
      if (v4 < 0) return false;
      groups[count++] = v4 >>> 16;
      groups[count++] = v4 & 0xffff;
      break;
    }
    if (j === i || j - i > 4 || count === 8) return false;
    groups[count++] = value;
    if (j === end) break;
    if (text.charCodeAt(j) !== COLON) return false;
    j++;
    if (j < end && text.charCodeAt(j) === COLON) {
      if (gapAt !== -1) return false;
      gapAt = count;
      j++;
    } else if (j === end) {
      return false; // a single trailing colon
    }
    i = j;
  }
  if (gapAt === -1) return count === 8;
  if (count > 7) return false; // `::` stands for at least one group
  const shift = 8 - count;
  for (let k = count - 1; k >= gapAt; k--) groups[k + shift] = groups[k] as number;
  groups.fill(0, gapAt, gapAt + shift);
  return true;
}

function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** `a.b.c.d` in `text[start, end)` as a 32-bit number, or -1. */
function parseIpv4(text: string, start: number, end: number): number {
  let result = 0;
  let octets = 0;
  let i = start;
  while (octets < 4) {
    let value = 0;
    let j = i;
    while (j < end && j - i < 3) {
      const code = text.charCodeAt(j);
      if (code < 0x30 || code > 0x39) break;
      value = value * 10 + code - 0x30;
      j++;
    }
    if (j === i || value > 255) return -1;
    result = result * 256 + value;
    octets++;
    if (octets === 4) return j === end ? result : -1;
    if (j >= end || text.charCodeAt(j) !== DOT) return -1;
    i = j + 1;
  }
  return -1;
}
