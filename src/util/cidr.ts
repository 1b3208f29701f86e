/**
 * Address lists of the config: `hooks.allowedSources`, a hook token's `allowedSources`
 * (docs/senders.md) and `gateway.trustedProxies` (docs/configuration.md). Each entry is a
 * CIDR (`10.0.0.0/8`, `2001:db8::/32`) or a single address (`203.0.113.7`, `::1`), read
 * with Node's own parser (`net.isIP`) and matched with `net.BlockList`.
 *
 * An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a dual-stack socket reports for an
 * IPv4 peer) is the IPv4 address it carries, both in a list and in an address tested
 * against one; otherwise an IPv4 entry matches IPv4 peers only and an IPv6 entry IPv6 peers
 * only (`::/0` lets no IPv4 peer in). Host bits after the prefix are ignored (`127.0.0.1/8`
 * is `127.0.0.0/8`).
 */
import { BlockList, isIP } from 'node:net';

export type CidrFamily = 'ipv4' | 'ipv6';

export interface Cidr {
  family: CidrFamily;
  /** The address part, IPv4-mapped IPv6 turned into IPv4. */
  address: string;
  /** The prefix length; 32 or 128 for a single address. */
  prefix: number;
}

export type CidrParse = { ok: true; cidr: Cidr } | { ok: false; problem: string };

const MAPPED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;
const EXAMPLES = 'like 203.0.113.7, 10.0.0.0/8 or 2001:db8::/32';

/** Reads one entry of an address list; the problem (when not ok) quotes the entry, without a key path. */
export function parseCidr(text: string): CidrParse {
  const quoted = JSON.stringify(text);
  const slash = text.indexOf('/');
  const addressPart = slash === -1 ? text : text.slice(0, slash);
  const prefixPart = slash === -1 ? undefined : text.slice(slash + 1);
  if (addressPart.includes('%')) {
    return { ok: false, problem: `${quoted}: a zone index (%…) has no place in an address list` };
  }
  const version = isIP(addressPart);
  if (version === 0) return { ok: false, problem: `${quoted} is not an IP address or CIDR (${EXAMPLES})` };
  let family: CidrFamily = version === 4 ? 'ipv4' : 'ipv6';
  const max = family === 'ipv4' ? 32 : 128;
  let prefix = max;
  if (prefixPart !== undefined) {
    if (!/^\d{1,3}$/.test(prefixPart) || Number(prefixPart) > max) {
      const hint = isIP(prefixPart) === 4 ? '; write the mask as a prefix length (255.0.0.0 is /8)' : '';
      return {
        ok: false,
        problem: `${quoted}: the prefix length must be a number from 0 to ${max} for ${family === 'ipv4' ? 'IPv4' : 'IPv6'}${hint}`,
      };
    }
    prefix = Number(prefixPart);
  }
  let address = addressPart;
  const mapped = MAPPED.exec(addressPart);
  if (mapped && prefix >= 96) {
    address = mapped[1] as string;
    family = 'ipv4';
    prefix -= 96;
  }
  return { ok: true, cidr: { family, address, prefix } };
}

/**
 * A test of addresses against a list of CIDRs or addresses, for the ingress: true when
 * `address` is inside any entry. An address that is not an IP address (a proxy's odd
 * header) is outside every list; so is every address when the list is empty. Throws a
 * TypeError on an entry `parseCidr` refuses (the config check reports those first).
 */
export function sourcesMatcher(cidrs: readonly string[]): (address: string) => boolean {
  // One list per family: Node's BlockList would also test an IPv4 address against IPv6
  // entries in their mapped form (so `::/0` would let every IPv4 peer in).
  const lists = { ipv4: new BlockList(), ipv6: new BlockList() };
  const used = { ipv4: false, ipv6: false };
  for (const entry of cidrs) {
    const parsed = parseCidr(entry);
    if (!parsed.ok) throw new TypeError(parsed.problem);
    const { address, prefix, family } = parsed.cidr;
    lists[family].addSubnet(address, prefix, family);
    used[family] = true;
  }
  return (address) => {
    const plain = plainAddress(address);
    const version = isIP(plain);
    if (version === 4) return used.ipv4 && lists.ipv4.check(plain, 'ipv4');
    return version === 6 && used.ipv6 && lists.ipv6.check(plain, 'ipv6');
  };
}

/** `[::1]` → `::1`, `fe80::1%eth0` → `fe80::1`, `::ffff:10.0.0.1` → `10.0.0.1`; anything else as is. */
export function plainAddress(address: string): string {
  let plain = address;
  if (plain.startsWith('[') && plain.endsWith(']')) plain = plain.slice(1, -1);
  const zone = plain.indexOf('%');
  if (zone !== -1) plain = plain.slice(0, zone);
  const mapped = MAPPED.exec(plain);
  return mapped ? (mapped[1] as string) : plain;
}
