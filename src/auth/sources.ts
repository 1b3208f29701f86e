/**
 * Source allow-lists (docs/senders.md, "Where a sender may send from"): whether
 * a client address is inside a list of CIDRs or single addresses, on Node's
 * `net.BlockList`. The config check refuses an entry it cannot read, so every
 * entry here parses.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { SourcesMatcher } from './hook-tokens.js';

export function sourcesMatcher(cidrs: readonly string[]): SourcesMatcher {
  const list = new BlockList();
  for (const entry of cidrs) {
    const [address = '', prefix] = entry.split('/');
    const type = isIPv4(address) ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return (address) => {
    // The client address is IPv4 for an IPv4 peer on a dual-stack socket (guards.ts folds ::ffff:).
    if (isIPv4(address)) return list.check(address, 'ipv4');
    return isIPv6(address) && list.check(address, 'ipv6');
  };
}
