/**
 * A running gateway, assembled: store + HTTP app + workers + housekeeping
 * timers, started and stopped as one ordered list of services (services.ts):
 * stop accepting, let in-flight requests and turns finish, close the store.
 */
import type { FastifyInstance } from 'fastify';
import { ModelRouter } from '../agents/models.js';
import { newOwnerId } from '../agents/owner.js';
import type { RetryPolicy } from '../agents/turn.js';
import { RunWorker } from '../agents/worker.js';
import { Alerts } from '../alerts/alerts.js';
import { AlertSummaries, type AlertSummariesOptions } from '../alerts/summaries.js';
import { AuthFailureLimiter, type AuthLimiter } from '../auth/auth-limiter.js';
import { SharedLockout } from '../auth/shared-lockout.js';
import { CallbackEngine, type CallbackEngineOptions } from '../callbacks/engine.js';
import { gatewayEndpoints } from '../callbacks/self.js';
import { DeliveryEngine } from '../channels/delivery.js';
import { createChannelAdapters } from '../channels/index.js';
import { watchConfigFile } from '../config/reload.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { HeartbeatScheduler } from '../heartbeat/scheduler.js';
import { HookIngress } from '../ingress/hooks-routes.js';
import { IDEMPOTENCY_TTL_MS } from '../ingress/idempotency.js';
import { RunCompletions } from '../ingress/run-completions.js';
import type { Logger } from '../log.js';
import type { TransformLimits } from '../mappings/transforms.js';
import { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { MeteredLimiter } from '../metrics/metered-limiter.js';
import { startTracing } from '../observability/tracing.js';
import { RetentionEngine } from '../retention/engine.js';
import { openStore } from '../store/drivers/registry.js';
import type { Store } from '../store/types.js';
import { DeltaHub } from '../streaming/run-deltas.js';
import { buildApp } from './app.js';
import { ServiceList } from './services.js';

export interface ListenOptions {
  port?: number;
  bind?: string;
  /** Test hook: a shorter body deadline than the 30 s of docs/errors.md. */
  bodyTimeoutMs?: number;
  /** How long a stop lets running agent turns finish before re-queueing them. */
  stopGraceMs?: number;
  /** Delivery retry pacing (tests make it fast). */
  deliveryBaseDelayMs?: number;
  /** Retries of transient provider errors within a turn (tests make them fast). */
  providerRetry?: RetryPolicy;
  /** Run the agent worker and heartbeats (default true); ingress-only tests turn them off. */
  workers?: boolean;
  /** Re-read the config file's hooks section when it changes (default true). */
  watchConfig?: boolean;
  /** Transform worker limits (time bound, heap, pool size); tests make the time bound short. */
  transforms?: Partial<TransformLimits>;
  /** Completion callback pacing and resolution (tests: a manual clock, a rebinding resolver). */
  callbacks?: Partial<Omit<CallbackEngineOptions, 'secret' | 'self' | 'onFinished'>>;
  /** The alert summary job's pacing (tests: a clock an hour ahead, a short poll). */
  alerts?: AlertSummariesOptions;
  /** Keep-alive comments of a streamed answer: 10 s (tests make them frequent). */
  streamKeepAliveMs?: number;
  /** The safety poll shared by the streams waiting on runs: 5 s (tests make it short or long). */
  streamSafetyPollMs?: number;
}

export interface RunningGateway {
  url: string;
  host: string;
  port: number;
  app: FastifyInstance;
  store: Store;
  /** The gateway's parts; `run` adds the Gmail receiver so that it stops first. */
  services: ServiceList;
  /** Its Prometheus metrics (`GET /metrics`); callbacks count their outcomes here. */
  metrics: GatewayMetrics;
  /** Streamed runs' reply pieces, here and from the other replicas (docs/callers.md, "Streamed answers"). */
  deltas: DeltaHub;
  stop(): Promise<void>;
}

const HOUR_MS = 60 * 60 * 1000;
const noop = () => {};

/**
 * Starts the parts in this order, and stops them in reverse: tracing (first
 * started, so it is stopped last and exports every span the others ended), transform pools,
 * store, housekeeping timers, retention, HTTP listener, delivery, agent turns (worker and
 * heartbeats), intake, config watcher. The listener binds before any work
 * starts, so a gateway that cannot take its port runs nothing from the
 * backlog; "intake" then closes the listener first on stop, so no request is
 * committed while the workers stop.
 */
export async function startGateway(
  config: ResolvedConfig,
  log: Logger,
  options: ListenOptions = {},
): Promise<RunningGateway> {
  const services = new ServiceList(log);
  const tracing = await services.open(
    'tracing',
    // The process environment, as the SDK reads its other OTEL_* variables from it too.
    () => startTracing(process.env, log),
    (opened) => opened?.shutdown(),
  );
  const ingress = await services.open(
    'transform pools',
    () => HookIngress.create(config, log, options.transforms),
    (opened) => opened.close(),
  );
  const store = await services.open(
    'store',
    () => openStore(config.store),
    (opened) => opened.close(),
  );
  const limiter = await services.open(
    'auth lockout',
    () => openLimiter(store, log),
    (opened) => opened.stop?.(),
  );
  const metrics = new GatewayMetrics(store, log);
  const workers = options.workers ?? true;
  const models = new ModelRouter(config);
  /** Read at each failure: a config reload applies to the next one (docs/alerts.md). */
  let alertsConfig = config.alerts;
  const alerts = new Alerts({
    config: () => alertsConfig,
    store,
    log,
    metrics,
    onQueued: () => delivery.notify(),
  });
  const delivery = new DeliveryEngine(store, createChannelAdapters(config.channels), config.channels, log, {
    baseDelayMs: options.deliveryBaseDelayMs,
    metrics,
    tracing,
    alerts,
    // A run's callback waits for its delivery to settle: send it now rather than at the next poll.
    onFinished: (item) => {
      if (item.kind === 'run') callbacks.notify();
    },
  });
  const notifyDelivery = () => delivery.notify();
  /** Every part started and none stopping (`/readyz`). */
  let running = false;
  let ownEndpoints: ReturnType<typeof gatewayEndpoints> = [];
  const retention = new RetentionEngine(store, config.store.retention, log, {
    onPruned: (kind, count) => metrics.storePruned(kind, count),
  });
  const callbacks = new CallbackEngine(store, log, {
    // The reloaded hooks section's secret: rotating it needs no restart.
    secret: () => ingress.state.config.hooks.callbacks?.secret,
    self: () => ownEndpoints,
    onFinished: (status) => metrics.callbackFinished(status),
    tracing,
    alerts,
    ...options.callbacks,
  });
  const alertSummaries = new AlertSummaries(store, alerts, log, options.alerts);
  const completions = new RunCompletions(store, {
    safetyPollMs: options.streamSafetyPollMs,
    onPollFailed: (error) => log.debug({ err: error }, "reading the streams' runs failed; trying again"),
  });
  const owner = newOwnerId();
  // Streamed answers' pieces: published to the other replicas where the store is shared
  // (PostgreSQL; on SQLite this process is the only replica, so nothing is batched to send),
  // and received from them on the store's listening connection until the store closes — with
  // the notice that a streamed run finished there, which ends its streams here at once.
  const { replicas } = store;
  const deltas = new DeltaHub({
    replica: owner,
    send: replicas.shared ? (payload) => replicas.sendDelta(payload) : undefined,
    log,
    onFinished: (runId) => completions.notify(runId),
    onMissed: () => completions.checkNow(),
  });
  replicas.watchDeltas((payload) => deltas.receive(payload));
  const providerRetry = options.providerRetry;
  const heartbeat = new HeartbeatScheduler({
    store,
    config,
    models,
    notifyDelivery,
    log,
    providerRetry,
    metrics,
    tracing,
  });
  const worker = new RunWorker({
    store,
    config,
    models,
    providerRetry,
    notifyDelivery,
    log,
    owner,
    metrics,
    tracing,
    requestHeartbeat: (sessionKey) => heartbeat.request(sessionKey),
    runCaps: (source) => ingress.runCap(source),
    alerts,
    deltas,
    onRunFinished: (runId) => {
      completions.notify(runId);
      // A run with nothing to deliver has its callback due now; the engine's poll covers the rest.
      callbacks.notify();
    },
  });
  const app = buildApp({
    config,
    ingress,
    store,
    completions,
    limiter: new MeteredLimiter(limiter, metrics),
    log,
    metrics,
    bodyTimeoutMs: options.bodyTimeoutMs,
    notifyDelivery: () => {
      if (workers) notifyDelivery();
    },
    isRunning: () => running,
    tracing,
    deltas,
    streamKeepAliveMs: options.streamKeepAliveMs,
    onCommitted: (actions) => {
      for (const action of actions) {
        if (!workers) continue;
        if (action.kind === 'agent') worker.notify();
        else if (action.event.wakeMode === 'now') heartbeat.request(action.event.sessionKey);
      }
    },
  });

  const prune = () =>
    store.pruneIdempotency(Date.now() - IDEMPOTENCY_TTL_MS).catch((error) => {
      log.warn({ err: error }, 'pruning idempotency records failed');
    });
  let timers: NodeJS.Timeout[] = [];
  await services.start({
    name: 'housekeeping timers',
    start: async () => {
      timers = [setInterval(prune, HOUR_MS), setInterval(() => limiter.sweep(), 60_000)];
      for (const timer of timers) timer.unref();
      await prune();
    },
    stop: () => {
      for (const timer of timers) clearInterval(timer);
    },
  });

  // Before the listener, so it stops after the workers (reverse order) and never outlives the store.
  await services.start({ name: 'retention', start: () => retention.start(), stop: () => retention.stop() });

  const host = options.bind ?? config.gateway.bind;
  let closing: Promise<void> | undefined;
  const closeApp = () => {
    closing ??= closeServer(app);
    return closing;
  };
  await services.start({
    name: 'http listener',
    start: () => app.listen({ host, port: options.port ?? config.gateway.port }),
    stop: closeApp,
  });
  if (workers) {
    await services.start({
      name: 'delivery engine',
      start: () => delivery.start(),
      stop: () => delivery.stop(),
    });
    await services.start({
      name: 'callback engine',
      start: () => {
        // Known now that the listener is bound (port 0 becomes the real port).
        ownEndpoints = gatewayEndpoints(config, app.server.address());
        callbacks.start();
      },
      stop: (grace) => callbacks.stop(grace),
    });
    await services.start({
      name: 'alert summaries',
      start: () => alertSummaries.start(),
      stop: () => alertSummaries.stop(),
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
  await services.start({ name: 'intake', start: noop, stop: closeApp });
  let stopWatching = noop;
  if (options.watchConfig !== false) {
    await services.start({
      name: 'config watcher',
      start: () => {
        stopWatching = watchConfigFile(
          config.configPath,
          async (next, warnings) => {
            await reloadHooks(config, next, warnings, ingress, log);
            if (JSON.stringify(next.alerts) !== JSON.stringify(alertsConfig)) {
              alertsConfig = next.alerts;
              log.info({ alerts: alertsConfig ? 'on' : 'off' }, 'config reloaded: alerts section applied');
            }
          },
          log,
        );
      },
      stop: () => stopWatching(),
    });
  }

  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? config.gateway.port);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  running = true;
  const stop = () => {
    running = false;
    return services.stop(options.stopGraceMs ?? 8000);
  };
  return { url: `http://${urlHost}:${port}`, host, port, app, store, services, metrics, deltas, stop };
}

/**
 * The auth-failure lockout: in memory on SQLite (one process per file), counted
 * across replicas where the store is shared (PostgreSQL: `replicas.shared`).
 */
async function openLimiter(store: Store, log: Logger): Promise<AuthLimiter & { stop?: () => Promise<void> }> {
  const local = new AuthFailureLimiter();
  if (!store.replicas.shared) return local;
  const shared = new SharedLockout(local, store.replicas.lockouts, log);
  await shared.start();
  return shared;
}

/**
 * Applies a changed config file's `hooks` section (token, mappings, presets,
 * policies) to the running ingress. Everything else — and `hooks.path` or
 * `hooks.enabled` — takes effect on the next start.
 */
async function reloadHooks(
  current: ResolvedConfig,
  next: ResolvedConfig,
  warnings: string[],
  ingress: HookIngress,
  log: Logger,
): Promise<void> {
  const { path, enabled } = current.hooks;
  if (next.hooks.path !== path || next.hooks.enabled !== enabled) {
    log.warn('config reload: hooks.path and hooks.enabled take effect on restart');
  }
  const restartOnly = (['gateway', 'store', 'models', 'agents', 'channels'] as const).filter(
    (key) => JSON.stringify(next[key]) !== JSON.stringify(current[key]),
  );
  if (restartOnly.length > 0)
    log.warn({ sections: restartOnly }, 'config reload: these sections take effect on restart');
  await ingress.reload({ ...current, hooks: { ...next.hooks, path, enabled } }, log);
  for (const warning of warnings) log.warn(`config: ${warning}`);
  log.info('config reloaded: hooks section applied');
}

/** How often a closing server looks for connections that have just gone idle. */
const IDLE_SWEEP_MS = 50;

/**
 * Stops accepting and waits for the requests in flight. Closing drops the
 * connections idle at that moment only; a kept-alive connection whose request
 * was still in flight would go idle afterwards and hold the close until its
 * keep-alive timeout (72 s). Sweeping idle connections until the close
 * completes ends each one as soon as its last answer is out.
 */
async function closeServer(app: FastifyInstance): Promise<void> {
  const sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
  try {
    await app.close();
  } finally {
    clearInterval(sweep);
  }
}
