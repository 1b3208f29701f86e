/**
 * `agentgate status`: is the gateway up (`/healthz`), ready (`/readyz`), and how
 * much work waits (queue depth from `/metrics`, the numbers the store holds —
 * the same on every replica). Exit 0 when up and ready, 1 otherwise.
 */
import { describeError, GatewayClient } from '../admin-client.js';
import { CliError } from '../cli-error.js';
import { fields, printJson } from '../format.js';
import { resolveTarget, type TargetOptions } from '../gateway-target.js';
import type { CliIo } from '../io.js';

export interface StatusOptions extends TargetOptions {
  json?: boolean;
}

interface Queue {
  queued: number | null;
  running: number | null;
  deliveriesPending: number | null;
  /** Where the numbers came from, or why there are none. */
  source: string;
}

export async function statusCommand(io: CliIo, options: StatusOptions): Promise<void> {
  const target = resolveTarget(options, io.env);
  const client = GatewayClient.of(target);

  const health = await client.request({ path: '/healthz', auth: 'none' });
  const healthy = health.status === 200 && health.json?.ok === true;
  const readyAnswer = await client.request({ path: '/readyz', auth: 'none' });
  // A gateway from before /readyz existed answers 404: readiness unknown, not "not ready".
  const ready: { ok: boolean | null; error?: string } =
    readyAnswer.status === 404 && readyAnswer.json?.code === 'not_found'
      ? { ok: null, error: 'this gateway has no /readyz' }
      : readyAnswer.status === 200
        ? { ok: true }
        : { ok: false, error: describeError(readyAnswer, 'GET /readyz') };
  const queue = await queueDepth(client);

  if (options.json) {
    printJson(io, {
      url: target.baseUrl,
      health: { ok: healthy },
      ready,
      queue: { queued: queue.queued, running: queue.running, deliveriesPending: queue.deliveriesPending },
    });
  } else {
    const count = (n: number | null) => (n === null ? '?' : String(n));
    io.console.log(
      fields([
        ['gateway', target.baseUrl],
        ['config', target.config.configPath],
        ['health', healthy ? 'ok' : `not ok: ${describeError(health, 'GET /healthz')}`],
        [
          'ready',
          ready.ok === true ? 'ok' : ready.ok === null ? `unknown (${ready.error})` : `no: ${ready.error}`,
        ],
        [
          'runs',
          queue.queued === null && queue.running === null
            ? `unknown (${queue.source})`
            : `${count(queue.queued)} queued, ${count(queue.running)} running`,
        ],
        ['deliveries', queue.deliveriesPending === null ? 'unknown' : `${queue.deliveriesPending} pending`],
      ]),
    );
  }
  if (!healthy || ready.ok === false) throw new CliError('', 1);
}

/** From `/metrics` (store-wide gauges); an older gateway without it: counted from `/api/runs`. */
async function queueDepth(client: GatewayClient): Promise<Queue> {
  // No admin token: the rest of the status still helps.
  if (!client.hasAdminToken) {
    return { queued: null, running: null, deliveriesPending: null, source: 'gateway.auth.token is not set' };
  }
  const metrics = await client.request({
    path: '/metrics',
    auth: 'admin',
    headers: { accept: 'text/plain' },
  });
  if (metrics.status === 200) {
    return {
      queued: gauge(metrics.raw, 'agentgate_runs_queued'),
      running: gauge(metrics.raw, 'agentgate_runs_running'),
      deliveriesPending: gauge(metrics.raw, 'agentgate_deliveries_pending'),
      source: '/metrics',
    };
  }
  if (metrics.status !== 404) {
    return {
      queued: null,
      running: null,
      deliveriesPending: null,
      source: describeError(metrics, 'GET /metrics'),
    };
  }
  const count = async (status: string) => {
    const answer = await client.request({ path: `/api/runs?status=${status}&limit=1000`, auth: 'admin' });
    const runs = answer.json?.runs;
    return answer.status === 200 && Array.isArray(runs) ? runs.length : null;
  };
  return {
    queued: await count('queued'),
    running: await count('running'),
    deliveriesPending: null,
    source: 'this gateway has neither /metrics nor /api/runs',
  };
}

/** The value of an unlabelled sample in Prometheus text exposition. */
export function gauge(text: string, name: string): number | null {
  const match = new RegExp(`^${name}(?:\\{\\})?\\s+(\\S+)`, 'm').exec(text);
  if (!match) return null;
  const value = Number(match[1]);
  return Number.isFinite(value) ? value : null;
}
