/**
 * The Node process defaults (CPU, memory, event-loop lag, GC, handles) on a
 * registry of ours, not prom-client's global one — a library or a second
 * gateway in the same process registering into the global registry would clash.
 *
 * One per process, made on first use (the first scrape), rather than one per
 * gateway: the figures describe the process whatever gateway reports them, and
 * each set of defaults starts its own event-loop monitor (a 10 ms timer) and GC
 * observer that cannot be stopped — a test process starting many gateways would
 * pile them up. prom-client's defaults (and the @opentelemetry/api they require)
 * load then too, not at start (docs/performance.md, "Start-up and idle memory").
 */
import { Registry } from './prom.js';

let shared: Promise<Registry> | undefined;

export function processMetrics(): Promise<Registry> {
  shared ??= import('prom-client').then(({ collectDefaultMetrics }) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    return registry;
  });
  return shared;
}
