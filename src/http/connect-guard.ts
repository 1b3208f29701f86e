/**
 * Connections whose address is checked where the socket is opened, for the
 * outbound client's `guard` (outbound.ts): the completion callbacks use it so a
 * callback never reaches the gateway's own listeners or a metadata address
 * (docs/callers.md, "SSRF rules").
 *
 * - A host name is resolved inside the connection's own `lookup` (an undici
 *   Agent's `connect.lookup`), so the address checked is the address connected
 *   to: there is no second resolution for a rebinding DNS server to answer
 *   differently. Every address of the name is checked; with one refused, none
 *   is used.
 * - An IP literal is never looked up (net.connect skips `lookup` for one), so
 *   it is checked before the request is made.
 * - Each request gets its own Agent with `pipelining: 0`: one connection per
 *   request, closed after it (`connection: close`), never reused. An explicit
 *   dispatcher also bypasses any process-wide dispatcher or proxy, so proxy
 *   environment variables are ignored, as docs/callers.md says.
 *
 * undici is imported on the first guarded request: it is Node's own HTTP
 * client, whose Agent class Node does not export; the npm package's Agent is
 * what Node's fetch takes as `dispatcher`.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';

/**
 * What Node's fetch takes as `dispatcher`. Its declared type comes from the
 * undici-types that @types/node pins, which differs in small type details
 * (FormData's iterators) from the undici package's own; the call protocol
 * between Node's fetch and the package's Agent is the same on Node 20.19, 22
 * and 24 (docs/design-decisions.md, the outbound client).
 */
export type FetchDispatcher = NonNullable<RequestInit['dispatcher']>;

/** Resolves a host name to every address (dns.lookup with `all: true`). */
export type Resolver = (
  hostname: string,
  callback: (error: Error | null, addresses: LookupAddress[]) => void,
) => void;

export const systemResolver: Resolver = (hostname, callback) =>
  dnsLookup(hostname, { all: true } satisfies LookupAllOptions, (error, addresses) =>
    callback(error, addresses ?? []),
  );

/** Where a request may connect. */
export interface ConnectGuard {
  /** Why connecting to `ip:port` is refused, or undefined when it is allowed. */
  check(ip: string, port: number): string | undefined;
  /** Host name resolution; default dns.lookup (tests: a rebinding DNS server). */
  resolve?: Resolver;
}

/** The error a refused lookup fails the connection with; fetch carries it as its `cause`. */
export const REFUSED_CODE = 'ETARGETREFUSED';

/** The connection for one guarded request, or why it is refused before any is made. */
export type GuardedTarget =
  | { refused: string }
  | {
      refused?: undefined;
      dispatcher: FetchDispatcher;
      /** Why the lookup refused the name's addresses, once it has. */
      refusal(): string | undefined;
    };

export async function guardedTarget(url: string, guard: ConnectGuard): Promise<GuardedTarget> {
  const parsed = new URL(url);
  const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) {
    const reason = guard.check(host, port);
    if (reason) return { refused: reason };
  }
  const resolve = guard.resolve ?? systemResolver;
  let refusal: string | undefined;
  const lookup = (
    hostname: string,
    options: { all?: boolean },
    callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    resolve(hostname, (error, addresses) => {
      if (error) return callback(error, []);
      if (addresses.length === 0)
        return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), []);
      for (const entry of addresses) {
        const reason = guard.check(entry.address, port);
        if (reason) {
          refusal = `${hostname} resolves to ${reason}`;
          return callback(Object.assign(new Error(refusal), { code: REFUSED_CODE }), []);
        }
      }
      if (options.all) return callback(null, addresses);
      const [first] = addresses as [LookupAddress];
      callback(null, first.address, first.family);
    });
  };
  const { Agent } = await import('undici');
  return {
    dispatcher: new Agent({ pipelining: 0, connect: { lookup } }) as unknown as FetchDispatcher,
    refusal: () => refusal,
  };
}
