/**
 * A running gateway, assembled in named steps — open the store and what it
 * needs, build the services and loops, start housekeeping, listen, start the
 * work loops, watch the config — as one ordered list of services (services.ts)
 * that stops in reverse: stop accepting, let in-flight requests and turns
 * finish, close the store.
 */
import type { FastifyInstance } from 'fastify';
import { newOwnerId } from '../agents/owner.js';
import type { RetryPolicy } from '../agents/turn.js';
import { Alerts } from '../alerts/alerts.js';
import type { AlertSummariesOptions } from '../alerts/summaries.js';
import { AuthFailureLimiter, type AuthLimiter } from '../auth/auth-limiter.js';
import { SharedLockout } from '../auth/shared-lockout.js';
import { BudgetBook } from '../budgets/book.js';
import { budgetAlerts } from '../budgets/budget-alerts.js';
import { budgetsOf } from '../budgets/scopes.js';
import type { SelfEndpoint } from '../callbacks/address-guard.js';
import type { CallbackEngineOptions } from '../callbacks/engine.js';
import { gatewayEndpoints } from '../callbacks/self.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { HookIngress } from '../ingress/hooks-routes.js';
import { RunCompletions } from '../ingress/run-completions.js';
import type { Logger } from '../log.js';
import type { TransformLimits } from '../mappings/transforms.js';
import { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { MeteredLimiter } from '../metrics/metered-limiter.js';
import { startTracing } from '../observability/tracing.js';
import { openStore } from '../store/drivers/registry.js';
import type { Store } from '../store/types.js';
import { DeltaHub } from '../streaming/run-deltas.js';
import { systemClock } from '../util/clock.js';
import { buildApp } from './app.js';
import { closeServer } from './close-server.js';
import { type AlertsSection, configWatcher } from './config-watcher.js';
import { buildLoops, type GatewayLoops, startHousekeeping, startWorkLoops } from './gateway-loops.js';
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

const noop = () => {};

/**
 * Starts the parts in this order, and stops them in reverse: tracing (first
 * started, so it is stopped last and exports every span the others ended), transform pools,
 * store, auth lockout, housekeeping timers, retention, HTTP listener, delivery, callbacks,
 * alert summaries, agent turns (worker and heartbeats), intake, config watcher. The listener
 * binds before any work starts, so a gateway that cannot take its port runs nothing from the
 * backlog; "intake" then closes the listener first on stop, so no request is committed while
 * the workers stop.
 */
export async function startGateway(
  config: ResolvedConfig,
  log: Logger,
  options: ListenOptions = {},
): Promise<RunningGateway> {
  const services = new ServiceList(log);
  const opened = await openParts(services, config, log, options);
  const built = buildParts(opened, config, log, options);
  await startHousekeeping(services, built.loops);
  // Before the listener: the door checks the budgets from its first request.
  const { budgets } = built;
  if (budgets)
    await services.start({ name: 'budgets', start: () => budgets.start(), stop: () => budgets.stop() });
  const listener = await listen(services, built.app, config, options);
  if (options.workers ?? true) {
    // Known now that the listener is bound (port 0 becomes the real port).
    built.self.current = gatewayEndpoints(config, built.app.server.address());
    await startWorkLoops(services, built.loops);
  }
  await services.start({ name: 'intake', start: noop, stop: listener.close });
  if (options.watchConfig !== false)
    await services.start(configWatcher(config, opened.ingress, built.alertsSection, built.loops.tools, log));
  built.state.running = true;
  const stop = () => {
    built.state.running = false;
    return services.stop(options.stopGraceMs ?? 8000);
  };
  const { app, metrics, deltas } = built;
  const { store } = opened;
  return { ...listener.address, app, store, services, metrics, deltas, stop };
}

/** What is opened before anything is built on it: tracing, the transform pools, the store, the lockout. */
interface OpenedParts {
  tracing: Awaited<ReturnType<typeof startTracing>>;
  ingress: HookIngress;
  store: Store;
  limiter: AuthLimiter;
}

async function openParts(
  services: ServiceList,
  config: ResolvedConfig,
  log: Logger,
  options: ListenOptions,
): Promise<OpenedParts> {
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
  return { tracing, ingress, store, limiter };
}

interface BuiltParts {
  app: FastifyInstance;
  metrics: GatewayMetrics;
  deltas: DeltaHub;
  loops: GatewayLoops;
  alertsSection: AlertsSection;
  /** The gateway's own sockets, set once it listens. */
  self: { current: readonly SelfEndpoint[] };
  /** Every part started and none stopping (`/readyz`). */
  state: { running: boolean };
  /** The budget book (docs/budgets.md); undefined with no `budgets`. */
  budgets: BudgetBook | undefined;
}

/** The services on the opened store: metrics, alerts, the streams' waits, the loops and the HTTP app. */
function buildParts(
  opened: OpenedParts,
  config: ResolvedConfig,
  log: Logger,
  options: ListenOptions,
): BuiltParts {
  const { store, tracing, ingress } = opened;
  const metrics = new GatewayMetrics(store, log);
  const alertsSection: AlertsSection = { current: config.alerts };
  const alerts = new Alerts({ config: () => alertsSection.current, store, log, metrics });
  const owner = newOwnerId();
  const { completions, deltas } = buildStreams(store, owner, log, options);
  const self: BuiltParts['self'] = { current: [] };
  const state = { running: false };
  const budgets = openBudgets(config, store, alerts, log);
  const loops = buildLoops(
    {
      ...opened,
      config,
      log,
      metrics,
      alerts,
      deltas,
      owner,
      self: () => self.current,
      onRunFinished: (runId) => completions.notify(runId),
      budgets,
    },
    options,
  );
  const app = buildApp({
    config,
    ingress,
    store,
    completions,
    limiter: new MeteredLimiter(opened.limiter, metrics),
    log,
    metrics,
    bodyTimeoutMs: options.bodyTimeoutMs,
    isRunning: () => state.running,
    tracing,
    deltas,
    streamKeepAliveMs: options.streamKeepAliveMs,
    budgets,
  });
  return { app, metrics, deltas, loops, alertsSection, self, state, budgets };
}

/**
 * The budget book, when `budgets` has any (docs/budgets.md): read again after every local commit
 * that added spend, every second where other replicas add to the same counters (PostgreSQL),
 * and once a minute otherwise (a safety net: every commit on SQLite is this process's own).
 * Read at start; a config reload does not change it.
 */
function openBudgets(
  config: ResolvedConfig,
  store: Store,
  alerts: Alerts,
  log: Logger,
): BudgetBook | undefined {
  if (config.budgets.length === 0) return undefined;
  return new BudgetBook(budgetsOf(config.budgets), {
    store,
    clock: systemClock,
    log,
    pollMs: store.replicas.shared ? 1000 : 60_000,
    onExceeded: budgetAlerts(alerts, store, systemClock),
  });
}

/**
 * The waits of `waitForCompletion` requests and streams, and streamed answers' pieces:
 * published to the other replicas where the store can (PostgreSQL), and received from
 * them on the store's listening connection until the store closes — with the notice that
 * a streamed run finished there, which ends its streams here at once.
 */
function buildStreams(store: Store, owner: string, log: Logger, options: ListenOptions) {
  const completions = new RunCompletions(store, {
    safetyPollMs: options.streamSafetyPollMs,
    onPollFailed: (error) => log.debug({ err: error }, "reading the streams' runs failed; trying again"),
  });
  const { replicas } = store;
  const deltas = new DeltaHub({
    replica: owner,
    send: replicas.shared ? (payload) => replicas.sendDelta(payload) : undefined,
    log,
    onFinished: (runId) => completions.notify(runId),
    onMissed: () => completions.checkNow(),
  });
  replicas.watchDeltas((payload) => deltas.receive(payload));
  return { completions, deltas };
}

/** Binds the listener; its close (once, however often asked) stops accepting and drains requests. */
async function listen(
  services: ServiceList,
  app: FastifyInstance,
  config: ResolvedConfig,
  options: ListenOptions,
): Promise<{ close: () => Promise<void>; address: { url: string; host: string; port: number } }> {
  const host = options.bind ?? config.gateway.bind;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= closeServer(app);
    return closing;
  };
  await services.start({
    name: 'http listener',
    start: () => app.listen({ host, port: options.port ?? config.gateway.port }),
    stop: close,
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? config.gateway.port);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return { close, address: { url: `http://${urlHost}:${port}`, host, port } };
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
