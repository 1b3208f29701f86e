/**
 * A running gateway: store + HTTP app + housekeeping timers, with an orderly
 * stop (stop accepting, let in-flight requests finish, close the store).
 */
import type { FastifyInstance } from 'fastify';
import { ModelRouter } from '../agents/models.js';
import { newOwnerId } from '../agents/owner.js';
import type { RetryPolicy } from '../agents/turn.js';
import { RunWorker } from '../agents/worker.js';
import { AuthFailureLimiter } from '../auth/auth-limiter.js';
import { DeliveryEngine } from '../channels/delivery.js';
import { createChannelAdapters } from '../channels/index.js';
import { watchConfigFile } from '../config/reload.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { HeartbeatScheduler } from '../heartbeat/scheduler.js';
import { HookIngress } from '../ingress/hooks-routes.js';
import { IDEMPOTENCY_TTL_MS } from '../ingress/idempotency.js';
import type { Logger } from '../log.js';
import type { TransformLimits } from '../mappings/transforms.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { buildApp } from './app.js';

export interface ListenOptions {
  port?: number;
  bind?: string;
  /** Test hook: a shorter body deadline than CONTRACT §4's 30 s. */
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
}

export interface RunningGateway {
  url: string;
  host: string;
  port: number;
  app: FastifyInstance;
  store: Store;
  stop(): Promise<void>;
}

const HOUR_MS = 60 * 60 * 1000;

export async function startGateway(
  config: ResolvedConfig,
  log: Logger,
  options: ListenOptions = {},
): Promise<RunningGateway> {
  const ingress = await HookIngress.create(config, log, options.transforms);
  const store = openStore(config.store);
  const limiter = new AuthFailureLimiter();
  const workers = options.workers ?? true;
  const models = new ModelRouter(config);
  const delivery = new DeliveryEngine(store, createChannelAdapters(config.channels), config.channels, log, {
    baseDelayMs: options.deliveryBaseDelayMs,
  });
  const notifyDelivery = () => delivery.notify();
  const providerRetry = options.providerRetry;
  const heartbeat = new HeartbeatScheduler({ store, config, models, notifyDelivery, log, providerRetry });
  const worker = new RunWorker({
    store,
    config,
    models,
    providerRetry,
    notifyDelivery,
    log,
    owner: newOwnerId(),
    requestHeartbeat: (sessionKey) => heartbeat.request(sessionKey),
  });
  const app = buildApp({
    config,
    ingress,
    store,
    limiter,
    log,
    bodyTimeoutMs: options.bodyTimeoutMs,
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
  const timers = [setInterval(prune, HOUR_MS), setInterval(() => limiter.sweep(), 60_000)];
  for (const timer of timers) timer.unref();
  await prune();

  const host = options.bind ?? config.gateway.bind;
  try {
    await app.listen({ host, port: options.port ?? config.gateway.port });
  } catch (error) {
    for (const timer of timers) clearInterval(timer);
    await store.close();
    await ingress.close();
    throw error;
  }
  if (workers) {
    await worker.start();
    await heartbeat.start();
    delivery.start();
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? config.gateway.port);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const stopWatching =
    options.watchConfig === false
      ? () => {}
      : watchConfigFile(
          config.configPath,
          (next, warnings) => reloadHooks(config, next, warnings, ingress, log),
          log,
        );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      for (const timer of timers) clearInterval(timer);
      stopWatching();
      await app.close();
      await ingress.close();
      const grace = options.stopGraceMs ?? 8000;
      await Promise.all([worker.stop(grace), heartbeat.stop(grace)]);
      await delivery.stop();
      await store.close();
    })();
    return stopping;
  };
  return { url: `http://${urlHost}:${port}`, host, port, app, store, stop };
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
