/**
 * Starts a real gateway in this process, on a random loopback port, with its own
 * temporary config directory and SQLite store. Requests go over real HTTP, or,
 * for a suite about the app's answers only (`inject: true`), through Fastify's
 * `inject()`: the same app, store and services, no socket (docs/development.md).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigFile } from '../../src/config/load.js';
import type { ResolvedConfig } from '../../src/config/resolved.js';
import { createLogger } from '../../src/log.js';
import { type ListenOptions, type RunningGateway, startGateway } from '../../src/server/gateway.js';

export const HOOK_TOKEN = 'hook-token-0123456789abcdef0123456789';
export const ADMIN_TOKEN = 'admin-token-0123456789abcdef012345678';

/** Deep-merges `override` into `base` (arrays and scalars replace). */
export function merge(
  base: Record<string, unknown>,
  override: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = out[key];
    out[key] =
      value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object'
        ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

export function baseConfig(): Record<string, unknown> {
  return {
    gateway: { bind: '127.0.0.1', port: 0, auth: { token: ADMIN_TOKEN } },
    hooks: { enabled: true, token: HOOK_TOKEN },
    models: { providers: { echo: { api: 'echo' } } },
    agents: { defaults: { model: 'echo/echo' } },
  };
}

export function tempDir(prefix = 'agentgate-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Writes `config` (merged over `baseConfig()`) to `<dir>/agentgate.json5`; returns the path. */
export function writeConfig(dir: string, override: Record<string, unknown> = {}, raw = false): string {
  const path = join(dir, 'agentgate.json5');
  writeFileSync(path, JSON.stringify(raw ? override : merge(baseConfig(), override), null, 2), {
    mode: 0o600,
  });
  return path;
}

export interface TestGateway {
  url: string;
  dir: string;
  config: ResolvedConfig;
  gateway: RunningGateway;
  /** POST JSON (or a raw string) to `{hooks_path}/<name>` with the hook token unless headers say otherwise. */
  hook(name: string, body: unknown, headers?: Record<string, string>): Promise<Answer>;
  /** GET an admin API path with the gateway token. */
  admin(path: string, headers?: Record<string, string>): Promise<Answer>;
  /** Any request, with only the headers given; through `inject()` on an `inject` gateway. */
  request(path: string, request?: TestRequest): Promise<Answer>;
  stop(): Promise<void>;
}

export interface TestRequest {
  method?: string;
  headers?: Record<string, string>;
  /** A string is sent as is (labelled text/plain, as fetch does); a Buffer without a Content-Type. */
  body?: string | Buffer;
}

export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: answers are JSON whose fields each test asserts itself
  body: any;
  text: string;
}

export async function readAnswer(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

export interface StartOptions {
  dir?: string;
  bodyTimeoutMs?: number;
  /** Run agent runs and heartbeats too; off by default, so ingress tests see runs as accepted. */
  workers?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Transform worker limits (e.g. a short time bound instead of 5 s). */
  transforms?: ListenOptions['transforms'];
  /** Completion callback pacing (a manual clock) and name resolution. */
  callbacks?: ListenOptions['callbacks'];
  /** A fixed port instead of a random one (tests that must name it in the config). */
  port?: number;
  /** The alert summary job's clock and poll (docs/alerts.md). */
  alerts?: ListenOptions['alerts'];
  /** Keep-alive comments of streamed answers (a short interval instead of 10 s). */
  streamKeepAliveMs?: number;
  /** The safety poll shared by waiting streams (instead of 5 s). */
  streamSafetyPollMs?: number;
  /**
   * `hook`, `admin` and `request` answer through Fastify's `inject()`, without a
   * socket: for suites about what the app answers. What only a connection shows
   * (a 413 the client really receives, body deadlines, the lockout by client
   * address, streams, a stop with requests in flight, parser errors) stays on
   * real HTTP — `url` still listens.
   */
  inject?: boolean;
}

/**
 * The SQLite store of a test gateway commits with `synchronous: "normal"`
 * (docs/configuration.md): a commit then waits for no WAL sync (~5 ms on the CI
 * disk each), and a test that does not cut the power sees the same store. A
 * config that names its own store setting or PostgreSQL keeps it; the tests of
 * durability itself (test/e2e/durability*, test/faults/) write their config
 * with `writeConfig`, which keeps the product's default.
 */
export function withTestStore(override: Record<string, unknown>): Record<string, unknown> {
  const store = (override.store ?? {}) as Record<string, unknown>;
  if (store.driver === 'postgres' || 'synchronous' in store) return override;
  return { ...override, store: { driver: 'sqlite', ...store, synchronous: 'normal' } };
}

/**
 * A test gateway's SQLite store runs no WAL checkpointer thread: SQLite's own
 * autocheckpoint keeps the WAL bounded instead. Starting and stopping that thread
 * was about half the CPU of starting and stopping a test gateway (~120 of ~270 ms
 * measured on the loaded 2-core machine); it is tested on its own
 * (test/store/sqlite-checkpointer.test.ts), and the real CLI keeps it.
 */
export function withoutCheckpointThread(config: ResolvedConfig): ResolvedConfig {
  return config.store.driver === 'sqlite'
    ? { ...config, store: { ...config.store, checkpointThread: false } }
    : config;
}

export async function startTestGateway(
  override: Record<string, unknown> = {},
  options: StartOptions = {},
): Promise<TestGateway> {
  const dir = options.dir ?? tempDir();
  const path = writeConfig(dir, withTestStore(override));
  const loaded = loadConfigFile(path, options.env ?? process.env);
  if (!loaded.ok) throw new Error(`test config invalid:\n${loaded.problems.join('\n')}`);
  const gateway = await startGateway(withoutCheckpointThread(loaded.config), createLogger('silent'), {
    port: options.port ?? 0,
    bodyTimeoutMs: options.bodyTimeoutMs,
    workers: options.workers ?? false,
    transforms: options.transforms,
    callbacks: options.callbacks,
    alerts: options.alerts,
    streamKeepAliveMs: options.streamKeepAliveMs,
    streamSafetyPollMs: options.streamSafetyPollMs,
  });
  const hooksPath = loaded.config.hooks.path;
  const url = gateway.url;
  const request = options.inject ? injector(gateway) : fetcher(url);
  return {
    url,
    dir,
    config: loaded.config,
    gateway,
    hook(name, body, headers = {}) {
      return request(`${hooksPath}/${name}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    admin(path, headers = {}) {
      return request(path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers } });
    },
    request,
    async stop() {
      await gateway.stop();
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

type Requester = (path: string, request?: TestRequest) => Promise<Answer>;

function fetcher(url: string): Requester {
  return async (path, { method = 'GET', headers = {}, body } = {}) =>
    readAnswer(await fetch(`${url}${path}`, { method, headers, body: body as RequestInit['body'] }));
}

/** Requests answered by `app.inject()`, with the headers fetch would add that matter to the app. */
function injector(gateway: RunningGateway): Requester {
  return async (path, { method = 'GET', headers = {}, body } = {}) => {
    const labelled = Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
    const answer = await gateway.app.inject({
      method: method as 'GET',
      url: path,
      headers:
        typeof body === 'string' && !labelled
          ? { 'content-type': 'text/plain;charset=UTF-8', ...headers }
          : headers,
      payload: body,
    });
    const answerHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      for (const one of Array.isArray(value) ? value : [value]) {
        if (one !== undefined) answerHeaders.append(name, String(one));
      }
    }
    let parsed: unknown;
    try {
      parsed = answer.payload ? JSON.parse(answer.payload) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: answer.statusCode, headers: answerHeaders, body: parsed, text: answer.payload };
  };
}
