/**
 * The gateway's own sockets, which a callback must never reach (address-guard.ts):
 * the HTTP listener as bound (admin API, dashboard, hooks), the configured port
 * too (a restart may bind it), and the Gmail push receiver when it runs.
 */
import type { AddressInfo } from 'node:net';
import type { ResolvedConfig } from '../config/resolved.js';
import type { SelfEndpoint } from './address-guard.js';

export function gatewayEndpoints(config: ResolvedConfig, bound: AddressInfo | string | null): SelfEndpoint[] {
  const endpoints: SelfEndpoint[] = [{ host: config.gateway.bind, port: config.gateway.port }];
  if (bound && typeof bound === 'object') endpoints.push({ host: bound.address, port: bound.port });
  const gmail = config.hooks.gmail;
  if (gmail?.account) endpoints.push({ host: gmail.serve.bind, port: gmail.serve.port });
  return endpoints.filter((endpoint) => endpoint.port > 0);
}
