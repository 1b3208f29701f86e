/**
 * The gateway's background loops (docs/architecture.md, "Background loops"),
 * built and started in dependency order. None pokes another: each wakes on the
 * store's `committed` signal for its kind of work (a reply committed to the
 * outbox wakes delivery, a run's end or a delivery's end wakes callbacks, …) and
 * on its own poll, so a loop never needs a handle on one built after it.
 */
import { ModelRouter } from '../agents/models.js';
import { ProviderLimits } from '../agents/provider-limits.js';
import { type ApproveTool, RunParked } from '../agents/tool-approval.js';
import type { RetryPolicy } from '../agents/turn.js';
import { RunWorker } from '../agents/worker.js';
import type { Alerts } from '../alerts/alerts.js';
import { AlertSummaries, type AlertSummariesOptions } from '../alerts/summaries.js';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import type { BudgetBook } from '../budgets/book.js';
import type { SelfEndpoint } from '../callbacks/address-guard.js';
import { CallbackEngine, type CallbackEngineOptions } from '../callbacks/engine.js';
import { DeliveryEngine } from '../channels/delivery.js';
import { createChannelAdapters } from '../channels/index.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { HeartbeatScheduler } from '../heartbeat/scheduler.js';
import type { HookIngress } from '../ingress/hooks-routes.js';
import { IDEMPOTENCY_TTL_MS } from '../ingress/idempotency.js';
import type { Logger } from '../log.js';
import { ScanLoop } from '../loops/scan-loop.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import type { SpanStarter } from '../observability/work-span.js';
import { RetentionEngine } from '../retention/engine.js';
import type { Store } from '../store/types.js';
import type { DeltaHub } from '../streaming/run-deltas.js';
import { createLazyToolSource } from '../tools/lazy-source.js';
import { systemClock } from '../util/clock.js';
import { ApprovalGate } from './approval-gate.js';
import { ApprovalTimeouts } from './approval-timeouts.js';
import type { ServiceList } from './services.js';

const HOUR_MS = 60 * 60 * 1000;
const LIMITER_SWEEP_MS = 60_000;

export interface LoopOptions {
  deliveryBaseDelayMs?: number;
  providerRetry?: RetryPolicy;
  callbacks?: Partial<Omit<CallbackEngineOptions, 'secret' | 'self' | 'onFinished'>>;
  alerts?: AlertSummariesOptions;
}

/** What the loops are built from: the opened store and the services around it. */
export interface LoopDeps {
  config: ResolvedConfig;
  log: Logger;
  store: Store;
  ingress: HookIngress;
  limiter: AuthLimiter;
  metrics: GatewayMetrics;
  tracing: SpanStarter | undefined;
  alerts: Alerts;
  deltas: DeltaHub;
  owner: string;
  /** The gateway's own sockets, known once it listens (callbacks refuse them). */
  self: () => readonly SelfEndpoint[];
  /** A run this process recorded as finished (its waiting requests and streams answer). */
  onRunFinished: (runId: string) => void;
  /** The budgets (docs/budgets.md); absent with none configured. */
  budgets?: BudgetBook;
}

export type GatewayLoops = ReturnType<typeof buildLoops>;

export function buildLoops(deps: LoopDeps, options: LoopOptions) {
  return {
    ...housekeeping(deps),
    retention: new RetentionEngine(deps.store, deps.config.store.retention, deps.log, {
      onPruned: (kind, count) => deps.metrics.storePruned(kind, count),
    }),
    ...outboxLoops(deps, options),
    ...agentLoops(deps, options),
  };
}

/** The hourly idempotency prune and the auth limiter's minute sweep. */
function housekeeping({ store, limiter, log }: LoopDeps) {
  const prune = () =>
    store
      .pruneIdempotency(Date.now() - IDEMPOTENCY_TTL_MS)
      .then(() => {})
      .catch((error) => log.warn({ err: error }, 'pruning idempotency records failed'));
  return {
    prune,
    pruneLoop: new ScanLoop(prune, systemClock, HOUR_MS, { scanAtStart: false }),
    sweepLoop: new ScanLoop(async () => limiter.sweep(), systemClock, LIMITER_SWEEP_MS, {
      scanAtStart: false,
    }),
  };
}

/** Delivery, completion callbacks and the alert summaries: the loops working through the outbox. */
function outboxLoops(deps: LoopDeps, options: LoopOptions) {
  const { config, store, log, metrics, tracing, alerts, ingress } = deps;
  const delivery = new DeliveryEngine(store, createChannelAdapters(config.channels), config.channels, log, {
    baseDelayMs: options.deliveryBaseDelayMs,
    metrics,
    tracing,
    alerts,
  });
  const callbacks = new CallbackEngine(store, log, {
    // The reloaded hooks section's secret: rotating it needs no restart.
    secret: () => ingress.state.config.hooks.callbacks?.secret,
    self: deps.self,
    onFinished: (status) => metrics.callbackFinished(status),
    tracing,
    alerts,
    ...options.callbacks,
  });
  const alertSummaries = new AlertSummaries(store, alerts, log, options.alerts);
  // The reloaded tools section's timeout: changing it needs no restart.
  const approvalTimeouts = new ApprovalTimeouts(store, () => ingress.state.config.tools.approvalTimeout, log);
  return { delivery, callbacks, alertSummaries, approvalTimeouts };
}

/** The run worker and the heartbeats: the loops that run agent turns, and the tools they call. */
function agentLoops(deps: LoopDeps, options: LoopOptions) {
  const { config, store, log, metrics, tracing } = deps;
  const models = new ModelRouter(config);
  const tools = createLazyToolSource(config, log);
  // Each provider's maxConcurrent, as the config in force says (docs/agent-runs.md, "Provider limits").
  const limits = new ProviderLimits((provider) => {
    const entry = deps.ingress.state.config.modelPolicy.providers.get(provider);
    return entry?.maxConcurrent;
  }, systemClock);
  const heartbeat = new HeartbeatScheduler({
    store,
    config,
    models,
    limits,
    log,
    providerRetry: options.providerRetry,
    metrics,
    tracing,
    budgets: deps.budgets,
  });
  const worker = new RunWorker({
    store,
    config,
    models,
    limits,
    providerRetry: options.providerRetry,
    log,
    owner: deps.owner,
    metrics,
    tracing,
    runCaps: (source) => deps.ingress.runCap(source),
    alerts: deps.alerts,
    deltas: deps.deltas,
    onRunFinished: deps.onRunFinished,
    tools,
    steps: store.steps,
    approveTool: approvalHook(deps),
    toolMetrics: metrics,
    currentConfig: () => deps.ingress.state.config,
    budgets: deps.budgets,
  });
  return { heartbeat, worker, tools };
}

/**
 * A run's `approve` hook over the approval gate (docs/operating.md, "Approving tool calls"): a
 * decision on record answers the loop; otherwise the run is parked as waiting (or its lease
 * was lost) and the attempt ends there.
 */
function approvalHook({ store, alerts, owner }: LoopDeps) {
  const gate = new ApprovalGate({ store, alerts });
  return (run: Parameters<ApprovalGate['approve']>[0]): ApproveTool =>
    async (call) => {
      const answer = await gate.approve(run, owner, {
        step: call.step,
        tool: call.tool,
        arguments: call.arguments,
      });
      if (answer === 'wait') throw new RunParked('waiting');
      if (answer === 'lost') throw new RunParked('lease_lost');
      return answer;
    };
}

/**
 * Housekeeping and retention: started before the listener, so they stop after
 * everything that writes (reverse order) and never outlive the store.
 */
export async function startHousekeeping(services: ServiceList, loops: GatewayLoops): Promise<void> {
  await services.start({
    name: 'housekeeping timers',
    start: async () => {
      loops.pruneLoop.start();
      loops.sweepLoop.start();
      await loops.prune();
    },
    stop: () => Promise.all([loops.pruneLoop.stop(), loops.sweepLoop.stop()]),
  });
  await services.start({
    name: 'retention',
    start: () => loops.retention.start(),
    stop: () => loops.retention.stop(),
  });
}

/**
 * The loops that do the work, once the listener is bound: the outbox's first,
 * so they are there for what the agent turns commit, and stop after them.
 */
export async function startWorkLoops(services: ServiceList, loops: GatewayLoops): Promise<void> {
  const { delivery, callbacks, alertSummaries, approvalTimeouts, worker, heartbeat, tools } = loops;
  await services.start({
    name: 'delivery engine',
    start: () => delivery.start(),
    stop: () => delivery.stop(),
  });
  await services.start({
    name: 'callback engine',
    start: () => callbacks.start(),
    stop: (grace) => callbacks.stop(grace),
  });
  await services.start({
    name: 'alert summaries',
    start: () => alertSummaries.start(),
    stop: () => alertSummaries.stop(),
  });
  await services.start({
    name: 'approval timeouts',
    start: () => approvalTimeouts.start(),
    stop: () => approvalTimeouts.stop(),
  });
  await services.start({
    name: 'tool servers',
    start: async () => {},
    // After the turns that call them have stopped (reverse order).
    stop: () => tools.close(),
  });
  await services.start({
    name: 'agent turns',
    start: async () => {
      await worker.start();
      await heartbeat.start();
    },
    // Together: each may take the whole grace for the turns it runs.
    stop: (grace) => Promise.all([worker.stop(grace), heartbeat.stop(grace)]),
  });
}
