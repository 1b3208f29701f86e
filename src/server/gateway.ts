/**
 * A running gateway: store + HTTP app + housekeeping timers, with an orderly
 * stop (stop accepting, let in-flight requests finish, close the store).
 */
import type { FastifyInstance } from 'fastify';
import type { ResolvedConfig } from '../config/resolved.js';
import { AuthFailureLimiter } from '../ingress/auth-limiter.js';
import { IDEMPOTENCY_TTL_MS } from '../ingress/idempotency.js';
import type { Logger } from '../log.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { buildApp } from './app.js';

export interface ListenOptions {
  port?: number;
  bind?: string;
  /** Test hook: a shorter body deadline than CONTRACT §4's 30 s. */
  bodyTimeoutMs?: number;
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
  const store = openStore(config.store);
  const limiter = new AuthFailureLimiter();
  const app = buildApp({ config, store, limiter, log, bodyTimeoutMs: options.bodyTimeoutMs });

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
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? config.gateway.port);
  const urlHost = host.includes(':') ? `[${host}]` : host;

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      for (const timer of timers) clearInterval(timer);
      await app.close();
      await store.close();
    })();
    return stopping;
  };
  return { url: `http://${urlHost}:${port}`, host, port, app, store, stop };
}
