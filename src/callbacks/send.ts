/**
 * One callback attempt over node:http(s), with the address guard applied where
 * it cannot be bypassed: an IP literal is checked before connecting, and a host
 * name through the request's own `lookup`, so the address checked is the one
 * connected to (no second resolution a rebinding DNS server could answer
 * differently). Redirects are not followed: a 3xx is an answer like any other,
 * and the engine ends the callback on it. No proxy, no connection reuse.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { networkCode, retryAfterMs } from '../http/outbound.js';
import { forbiddenTarget, type SelfEndpoint } from './address-guard.js';

/** Resolves a host name to every address (dns.lookup with `all: true`). */
export type Resolver = (
  hostname: string,
  callback: (error: Error | null, addresses: LookupAddress[]) => void,
) => void;

export const systemResolver: Resolver = (hostname, callback) =>
  dnsLookup(hostname, { all: true } satisfies LookupAllOptions, (error, addresses) =>
    callback(error, addresses ?? []),
  );

export interface CallbackRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  self: readonly SelfEndpoint[];
  resolve?: Resolver;
  signal?: AbortSignal;
  /** For an HTTP-date Retry-After. */
  now?: number;
}

export type CallbackResult =
  /** The receiver answered (any status). */
  | { kind: 'answer'; status: number; retryAfterMs?: number }
  /** The guard refused the target: permanent. */
  | { kind: 'refused'; reason: string }
  /** No answer (refused, reset, DNS, timeout): temporary. */
  | { kind: 'network'; reason: string };

const FORBIDDEN = 'ECALLBACKFORBIDDEN';

class ForbiddenTarget extends Error {
  readonly code = FORBIDDEN;
}

export function sendCallback(request: CallbackRequest): Promise<CallbackResult> {
  const url = new URL(request.url);
  const secure = url.protocol === 'https:';
  const port = Number(url.port || (secure ? 443 : 80));
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) {
    const reason = forbiddenTarget(host, port, request.self);
    if (reason) return Promise.resolve({ kind: 'refused', reason });
  }
  const resolve = request.resolve ?? systemResolver;
  // Every address of the name is checked: with one forbidden, none is used.
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
        const reason = forbiddenTarget(entry.address, port, request.self);
        if (reason) return callback(new ForbiddenTarget(`${hostname} resolves to ${reason}`), []);
      }
      if (options.all) return callback(null, addresses);
      const [first] = addresses as [LookupAddress];
      callback(null, first.address, first.family);
    });
  };

  return new Promise((settle) => {
    let done = false;
    const finish = (result: CallbackResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      settle(result);
    };
    const outgoing = (secure ? https : http).request(
      {
        protocol: url.protocol,
        hostname: host,
        port,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
        lookup: lookup as never,
        agent: false,
        servername: secure && isIP(host) === 0 ? host : undefined,
      },
      (response) => {
        // The answer's body is not used: drain it so the socket closes.
        response.resume();
        response.on('error', () => {});
        finish({
          kind: 'answer',
          status: response.statusCode ?? 0,
          retryAfterMs: retryAfterMs([response.headers['retry-after']], request.now),
        });
      },
    );
    const timer = setTimeout(() => {
      outgoing.destroy();
      finish({ kind: 'network', reason: `no answer within ${request.timeoutMs / 1000} s` });
    }, request.timeoutMs);
    timer.unref();
    const onAbort = () => {
      outgoing.destroy();
      finish({ kind: 'network', reason: 'the gateway is stopping' });
    };
    if (request.signal?.aborted) onAbort();
    request.signal?.addEventListener('abort', onAbort);
    outgoing.on('error', (error) => {
      if (error instanceof ForbiddenTarget) finish({ kind: 'refused', reason: error.message });
      // Only the code: a message may quote the URL, which may carry a token.
      else finish({ kind: 'network', reason: `request failed (${networkCode(error)})` });
    });
    outgoing.end(request.body);
  });
}
