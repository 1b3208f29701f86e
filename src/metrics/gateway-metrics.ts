/**
 * The gateway's Prometheus metrics (docs/operating.md, "Metrics"), on a registry of its own so
 * that two gateways in one process (tests) never share or clash on a series.
 *
 * Counters and histograms are this process's: Prometheus sums replicas. The
 * gauges that describe shared state (runs queued and running, deliveries
 * pending) are read from the store at scrape time, so every replica on one
 * PostgreSQL database reports the same, true figure.
 *
 * The hook path records every answer, so it must stay cheap: its two series
 * are plain numbers until scraped (hook-series.ts), and durations come from
 * the hrtime span Fastify already takes for every reply.
 */

import type { Logger } from '../log.js';
import type { StoreCounts, TokenUsage } from '../store/types.js';
import { HookSeries } from './hook-series.js';
import { processMetrics } from './process-metrics.js';
import { Counter, Gauge, Histogram, Registry } from './prom.js';

export type RunFinishedStatus = 'succeeded' | 'failed' | 'timed_out';
export type OutcomeStatus = 'delivered' | 'failed';
/** agentgate_alerts_total's statuses (docs/alerts.md, "Metrics"). */
export const ALERT_STATUSES = ['queued', 'suppressed', 'summarized', 'sent', 'failed'] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];

/** The part of the store a scrape reads. */
export interface CountsSource {
  counts(): Promise<StoreCounts>;
}

/** Agent turns take seconds to minutes (the default timeout is 600 s). */
const RUN_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly hooks: HookSeries;
  private readonly runsFinished: Counter<'status'>;
  private readonly runsDeferred: Counter<'provider'>;
  private readonly runDuration: Histogram<'status'>;
  private readonly runsQueued: Gauge;
  private readonly runsRunning: Gauge;
  private readonly deliveries: Counter<'channel' | 'status'>;
  private readonly deliveriesPending: Gauge;
  private readonly heartbeats: Counter<'status'>;
  private readonly authFailures: Counter;
  private readonly hooksFiltered: Counter<'hook'>;
  private readonly authLockouts: Counter;
  private readonly callbacks: Counter<'status'>;
  private readonly pruned: Counter<'kind'>;
  private readonly alerts: Counter<'status'>;
  private readonly toolCalls: Counter<'tool' | 'status'>;
  private readonly modelTokens: Counter<'provider' | 'model' | 'kind'>;
  private readonly modelCost: Counter<'provider' | 'model'>;

  constructor(
    private readonly source: CountsSource,
    private readonly log?: Logger,
  ) {
    const registers = [this.registry];
    this.hooks = new HookSeries(this.registry);
    this.runsFinished = new Counter({
      name: 'agentgate_runs_finished_total',
      help: 'Agent runs finished by this process, by final status.',
      labelNames: ['status'],
      registers,
    });
    this.runDuration = new Histogram({
      name: 'agentgate_run_duration_seconds',
      help: 'Time from a run starting to execute to its end, by final status.',
      labelNames: ['status'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.runsQueued = new Gauge({
      name: 'agentgate_runs_queued',
      help: 'Agent runs waiting to execute (read from the store: all replicas).',
      registers,
    });
    this.runsRunning = new Gauge({
      name: 'agentgate_runs_running',
      help: 'Agent runs executing now (read from the store: all replicas).',
      registers,
    });
    this.runsDeferred = new Counter({
      name: 'agentgate_runs_deferred_total',
      help:
        'Runs put back in the queue because their provider answered 429 for longer than their retries ' +
        'wait (docs/agent-runs.md, "Provider limits"), by that provider.',
      labelNames: ['provider'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'agentgate_deliveries_total',
      help: 'Replies whose delivery ended, by channel and outcome (retries are not counted until the end).',
      labelNames: ['channel', 'status'],
      registers,
    });
    this.deliveriesPending = new Gauge({
      name: 'agentgate_deliveries_pending',
      help: 'Replies waiting in the outbox to be delivered (read from the store: all replicas).',
      registers,
    });
    this.heartbeats = new Counter({
      name: 'agentgate_heartbeats_total',
      help: 'Heartbeat turns finished by this process, by status.',
      labelNames: ['status'],
      registers,
    });
    this.authFailures = new Counter({
      name: 'agentgate_auth_failures_total',
      help: 'Failed authentications (hook token, admin token, sender signature).',
      registers,
    });
    this.hooksFiltered = new Counter({
      name: 'agentgate_hook_filtered_total',
      help: "Hook requests a mapping's filter turned away (answered 200, nothing stored), by hook.",
      labelNames: ['hook'],
      registers,
    });
    this.authLockouts = new Counter({
      name: 'agentgate_auth_lockouts_total',
      help: 'Client addresses locked out after repeated authentication failures.',
      registers,
    });
    this.callbacks = new Counter({
      name: 'agentgate_callbacks_total',
      help: 'Completion callbacks that ended, by outcome (retries are not counted until the end).',
      labelNames: ['status'],
      registers,
    });
    this.pruned = new Counter({
      name: 'agentgate_store_pruned_total',
      help: 'Runs and events deleted by retention (store.retention), by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.alerts = new Counter({
      name: 'agentgate_alerts_total',
      help: 'Alerts (alerts): messages queued, sent or failed; failures suppressed over maxPerHour and summarized.',
      labelNames: ['status'],
      registers,
    });
    this.toolCalls = new Counter({
      name: 'agentgate_tool_calls_total',
      help: 'Tool calls of agent runs (tools), by <server>.<tool> and status (ok, error, denied).',
      labelNames: ['tool', 'status'],
      registers,
    });
    this.modelTokens = new Counter({
      name: 'agentgate_model_tokens_total',
      help:
        'Tokens of model calls (runs and heartbeats), by provider, model and kind: input (cached ones ' +
        'included), output, cache_read, cache_write.',
      labelNames: ['provider', 'model', 'kind'],
      registers,
    });
    this.modelCost = new Counter({
      name: 'agentgate_model_cost_usd_total',
      help: 'Cost in USD of model calls at models.providers.<name>.prices, by provider and model (priced models only).',
      labelNames: ['provider', 'model'],
      registers,
    });
    // Series of a fixed label set start at 0, so rate() and absent-series alerts work from the first scrape.
    for (const status of ['succeeded', 'failed', 'timed_out'] as const) {
      this.runsFinished.labels(status).inc(0);
      this.runDuration.zero({ status });
    }
    for (const status of ['succeeded', 'failed'] as const) this.heartbeats.labels(status).inc(0);
    for (const status of ['delivered', 'failed'] as const) this.callbacks.labels(status).inc(0);
    for (const kind of ['runs', 'events'] as const) this.pruned.labels(kind).inc(0);
    for (const status of ALERT_STATUSES) this.alerts.labels(status).inc(0);
  }

  /**
   * A hook request was answered (every status, rejections included); `token` is the id of the
   * hook token that matched, `none` when none did.
   */
  hookAnswered(hook: string, code: number, seconds: number, token: string): void {
    this.hooks.record(hook, code, seconds, token);
  }

  /** A mapping's filter turned a request away (docs/mappings.md, "Filters"). */
  hookFiltered(hook: string): void {
    this.hooksFiltered.labels(hook).inc();
  }

  runFinished(status: RunFinishedStatus, seconds: number): void {
    this.runsFinished.labels(status).inc();
    if (Number.isFinite(seconds) && seconds >= 0) this.runDuration.labels(status).observe(seconds);
  }

  /** A run was put back in the queue for a provider's rate limit (not a finish, not an attempt). */
  runDeferred(provider: string): void {
    this.runsDeferred.labels(provider).inc();
  }

  /** A delivery ended (not each retry). */
  deliveryFinished(channel: string, status: OutcomeStatus): void {
    this.deliveries.labels(channel, status).inc();
  }

  heartbeatFinished(status: 'succeeded' | 'failed'): void {
    this.heartbeats.labels(status).inc();
  }

  authFailed(): void {
    this.authFailures.inc();
  }

  authLockedOut(): void {
    this.authLockouts.inc();
  }

  /** A completion callback ended: delivered (2xx) or failed for good (the callback engine calls this). */
  callbackFinished(status: OutcomeStatus): void {
    this.callbacks.labels(status).inc();
  }

  /** Alerts by status (docs/alerts.md, "Metrics"): `count` of them at once for `summarized`. */
  alertCounted(status: AlertStatus, count = 1): void {
    this.alerts.labels(status).inc(count);
  }

  /** A run's tool call finished (docs/agent-runs.md, "Tools"); `tool` is `<server>.<tool>` or `unknown`. */
  toolCallFinished(tool: string, status: 'ok' | 'error' | 'denied'): void {
    this.toolCalls.labels(tool, status).inc();
  }

  /** A model call returned having used `usage`, costing `costUsd` (null: its model has no price). */
  modelCallUsage(provider: string, model: string, usage: TokenUsage, costUsd: number | null): void {
    this.modelTokens.labels(provider, model, 'input').inc(usage.inputTokens);
    this.modelTokens.labels(provider, model, 'output').inc(usage.outputTokens);
    this.modelTokens.labels(provider, model, 'cache_read').inc(usage.cacheReadTokens);
    this.modelTokens.labels(provider, model, 'cache_write').inc(usage.cacheWriteTokens);
    if (costUsd !== null) this.modelCost.labels(provider, model).inc(costUsd);
  }

  /** Retention deleted `count` runs or events (one call per batch). */
  storePruned(kind: 'runs' | 'events', count: number): void {
    this.pruned.labels(kind).inc(count);
  }

  readonly contentType = this.registry.contentType;

  /**
   * The exposition: the store's gauges read now, this gateway's series, then the
   * process defaults. A store that cannot answer leaves its gauges NaN (the
   * rest is still worth scraping) and says so in the log.
   */
  async exposition(): Promise<string> {
    try {
      const counts = await this.source.counts();
      this.runsQueued.set(counts.runsQueued);
      this.runsRunning.set(counts.runsRunning);
      this.deliveriesPending.set(counts.deliveriesPending);
    } catch (error) {
      this.log?.warn({ err: error }, 'metrics: the store did not answer; its gauges are NaN');
      for (const gauge of [this.runsQueued, this.runsRunning, this.deliveriesPending]) gauge.set(Number.NaN);
    }
    const [own, process] = await Promise.all([
      this.registry.metrics(),
      processMetrics().then((registry) => registry.metrics()),
    ]);
    return `${own}\n${process}`;
  }
}
