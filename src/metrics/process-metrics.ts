/**
 * The Node process defaults (CPU, memory, event-loop lag, GC, handles) on a
 * registry of ours, not prom-client's global one — a library or a second
 * gateway in the same process registering into the global registry would clash.
 *
 * One per process, made on first use, rather than one per gateway: the
 * figures describe the process whatever gateway reports them, and each set of
 * defaults starts its own event-loop monitor (a 10 ms timer) and GC observer
 * that cannot be stopped — a test process starting many gateways would pile
 * them up.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';

let shared: Registry | undefined;

export function processMetrics(): Registry {
  if (shared === undefined) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
  }
  return shared;
}
