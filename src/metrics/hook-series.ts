/**
 * The hook path's two series — agentgate_hook_requests_total{hook,code,token} and
 * agentgate_hook_request_duration_seconds{hook} — counted in plain numbers
 * per hook and handed to prom-client only when scraped.
 *
 * Why not prom-client's own `inc`/`observe` per request: even on bound label
 * children they validate and hash the labels on every call, ~1.5 µs per
 * answer together (measured), about 5 % of what a whole /hooks/wake costs the
 * gateway; a map lookup, an array slot and two additions cost ~0.1 µs.
 * prom-client still owns the names, help, types and the text exposition.
 */
import { Counter, Histogram, type Registry } from './prom.js';

/**
 * Hook answers take from under a millisecond (rejections) to a few hundred
 * (a slow disk, a transform): finer buckets at the low end than prom-client's
 * defaults, which start at 5 ms.
 */
export const HOOK_BUCKETS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

interface HookStats {
  /**
   * Answers per hook token id (`none` before a token matched), then per HTTP status. Token ids
   * are the operator's few (docs/senders.md), so the label stays bounded.
   */
  codes: Map<string, Map<number, number>>;
  /** Observations per bucket, not cumulative; an observation above the last bound is only in `count`. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

export class HookSeries {
  /** Per hook label: bounded by the config's hooks plus `unknown`. */
  private readonly hooks = new Map<string, HookStats>();

  constructor(registry: Registry) {
    const hooks = this.hooks;
    const requests = new Counter({
      name: 'agentgate_hook_requests_total',
      help: 'Hook requests answered, by hook (wake, agent, a mapping id, or unknown), HTTP status and hook token id (none when no token matched).',
      labelNames: ['hook', 'code', 'token'],
      registers: [registry],
      // Runs at scrape time: the totals replace whatever the counter held.
      collect() {
        requests.reset();
        for (const [hook, stats] of hooks) {
          for (const [token, codes] of stats.codes) {
            for (const [code, count] of codes) requests.inc({ hook, code: String(code), token }, count);
          }
        }
      },
    });
    registry.registerMetric(new HookDurationHistogram(hooks));
  }

  record(hook: string, code: number, seconds: number, token: string): void {
    let stats = this.hooks.get(hook);
    if (stats === undefined) {
      stats = { codes: new Map(), buckets: new Float64Array(HOOK_BUCKETS.length), sum: 0, count: 0 };
      this.hooks.set(hook, stats);
    }
    let codes = stats.codes.get(token);
    if (codes === undefined) {
      codes = new Map();
      stats.codes.set(token, codes);
    }
    codes.set(code, (codes.get(code) ?? 0) + 1);
    let bucket = 0;
    while (bucket < HOOK_BUCKETS.length && seconds > (HOOK_BUCKETS[bucket] as number)) bucket++;
    if (bucket < HOOK_BUCKETS.length) stats.buckets[bucket] = (stats.buckets[bucket] as number) + 1;
    stats.sum += seconds;
    stats.count++;
  }
}

/** One sample as prom-client's registry renders it. */
interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * agentgate_hook_request_duration_seconds as a prom-client Histogram whose
 * samples are read from `HookStats` when scraped. prom-client has no public way
 * to set a histogram's buckets, so this overrides the two reads the registry
 * makes (`getForPromString` for the text, `get` for JSON) with samples in the
 * shape prom-client's Histogram itself produces. Nothing is observed through it.
 */
const DURATION_NAME = 'agentgate_hook_request_duration_seconds';
const DURATION_HELP = 'Time from a hook request to its answer being sent, by hook.';

class HookDurationHistogram extends Histogram<'hook'> {
  constructor(private readonly hooks: ReadonlyMap<string, HookStats>) {
    super({
      name: DURATION_NAME,
      help: DURATION_HELP,
      labelNames: ['hook'],
      buckets: [...HOOK_BUCKETS],
      registers: [],
    });
  }

  private samples(): Sample[] {
    const values: Sample[] = [];
    for (const [hook, stats] of this.hooks) {
      let cumulative = 0;
      for (const [index, bound] of HOOK_BUCKETS.entries()) {
        cumulative += stats.buckets[index] as number;
        values.push({
          metricName: `${DURATION_NAME}_bucket`,
          labels: { hook, le: bound },
          value: cumulative,
        });
      }
      values.push({
        metricName: `${DURATION_NAME}_bucket`,
        labels: { hook, le: '+Inf' },
        value: stats.count,
      });
      values.push({ metricName: `${DURATION_NAME}_sum`, labels: { hook }, value: stats.sum });
      values.push({ metricName: `${DURATION_NAME}_count`, labels: { hook }, value: stats.count });
    }
    return values;
  }

  async getForPromString() {
    return {
      name: DURATION_NAME,
      help: DURATION_HELP,
      type: 'histogram',
      values: this.samples(),
      aggregator: 'sum',
    };
  }

  override async get() {
    return (await this.getForPromString()) as unknown as Awaited<ReturnType<Histogram<'hook'>['get']>>;
  }
}
