/**
 * Where a callback may never connect (docs/callers.md, "SSRF rules"): the payload of a
 * callback is chosen by whoever sent the hook, so its target must not be the
 * gateway's own API (its listen address and port, and every local alias of it)
 * nor a link-local or cloud metadata address — whatever the allowed origins
 * say. The check is made on the address actually connected to (http/connect-guard.ts), so
 * a name that resolves elsewhere the second time (DNS rebinding) cannot pass.
 */
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/** A socket of the gateway itself (its HTTP listener, the Gmail push receiver). */
export interface SelfEndpoint {
  host: string;
  port: number;
}

/** Link-local and metadata: never a callback target. IPv4-mapped IPv6 forms match the IPv4 rules. */
const METADATA = new BlockList();
METADATA.addSubnet('169.254.0.0', 16, 'ipv4');
METADATA.addSubnet('fe80::', 10, 'ipv6');
METADATA.addAddress('fd00:ec2::254', 'ipv6');

/** Addresses that reach this host whatever interface the gateway listens on. */
const LOCAL = new BlockList();
LOCAL.addSubnet('127.0.0.0', 8, 'ipv4');
LOCAL.addSubnet('0.0.0.0', 8, 'ipv4');
LOCAL.addAddress('::1', 'ipv6');
LOCAL.addAddress('::', 'ipv6');

const family = (ip: string): 'ipv4' | 'ipv6' => (isIP(ip) === 6 ? 'ipv6' : 'ipv4');

/** IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as its IPv4 address, for comparisons with bind addresses. */
function plain(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return (mapped ? (mapped[1] as string) : ip).toLowerCase();
}

/** This host's interface addresses, read per check (interfaces come and go). */
function interfaceAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) out.add(plain(entry.address.split('%')[0] as string));
  }
  return out;
}

/**
 * Why connecting to `ip:port` is refused, or undefined when it is allowed.
 * The gateway's own port is refused on every address of this host — loopback,
 * the unspecified address, the bind address, each interface address — since
 * any of them may reach a listener bound to 0.0.0.0 or an alias of it.
 */
export function forbiddenTarget(ip: string, port: number, self: readonly SelfEndpoint[]): string | undefined {
  const address = plain(ip.split('%')[0] as string);
  if (isIP(address) === 0) return `"${ip}" is not an IP address`;
  if (METADATA.check(address, family(address))) {
    return `${address} is a link-local or cloud metadata address`;
  }
  const ownPorts = self.filter((endpoint) => endpoint.port === port);
  if (ownPorts.length === 0) return undefined;
  const local =
    LOCAL.check(address, family(address)) ||
    ownPorts.some((endpoint) => plain(endpoint.host) === address) ||
    interfaceAddresses().has(address);
  return local ? `${address}:${port} is the gateway's own listener` : undefined;
}
