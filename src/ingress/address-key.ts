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
  return ipv6Key(address) ?? address.slice(0, MAX_KEY_LENGTH);
}

/** `2001:db8:a:b::/64` for any address in that /64, the IPv4 address for an IPv4-mapped one; undefined if not IPv6. */
function ipv6Key(address: string): string | undefined {
  const zone = address.indexOf('%');
  let text = zone === -1 ? address : address.slice(0, zone);
  if (text.length > 45) return undefined;
  // An embedded dotted IPv4 tail is the last 32 bits: rewrite it as two hex groups.
  let mappedV4: string | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.indexOf('.', lastColon) !== -1) {
    const v4 = text.slice(lastColon + 1);
    const octets = parseIpv4(v4);
    if (!octets) return undefined;
    mappedV4 = v4;
    text = `${text.slice(0, lastColon + 1)}${((octets[0] << 8) | octets[1]).toString(16)}:${((octets[2] << 8) | octets[3]).toString(16)}`;
  }
  const groups = expandIpv6(text);
  if (!groups) return undefined;
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0) {
    if (groups[5] === 0xffff) {
      const high = groups[6] as number;
      const low = groups[7] as number;
      return mappedV4 ?? `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
    }
  }
  return `${(groups[0] as number).toString(16)}:${(groups[1] as number).toString(16)}:${(groups[2] as number).toString(16)}:${(groups[3] as number).toString(16)}::/64`;
}

/** The eight 16-bit groups of an IPv6 address in text (no dotted tail), or undefined if it is not one. */
function expandIpv6(text: string): number[] | undefined {
  const gap = text.indexOf('::');
  if (gap !== -1 && text.indexOf('::', gap + 1) !== -1) return undefined;
  const head = gap === -1 ? text : text.slice(0, gap);
  const tail = gap === -1 ? '' : text.slice(gap + 2);
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  if (gap === -1 ? missing !== 0 : missing < 1) return undefined;
  const groups: number[] = [];
  for (const group of headGroups) {
    const value = parseGroup(group);
    if (value === undefined) return undefined;
    groups.push(value);
  }
  for (let i = 0; i < missing && gap !== -1; i++) groups.push(0);
  for (const group of tailGroups) {
    const value = parseGroup(group);
    if (value === undefined) return undefined;
    groups.push(value);
  }
  return groups;
}

function parseGroup(group: string): number | undefined {
  return /^[0-9a-fA-F]{1,4}$/.test(group) ? Number.parseInt(group, 16) : undefined;
}

function parseIpv4(text: string): [number, number, number, number] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const octets = parts.map((part) => (/^\d{1,3}$/.test(part) ? Number(part) : 256));
  if (octets.some((octet) => octet > 255)) return undefined;
  return octets as [number, number, number, number];
}
