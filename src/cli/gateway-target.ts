/**
 * Where the operator commands find the running gateway: the config file is
 * located and loaded exactly as `agentgate run` does (docs/cli.md), and the
 * address comes from `gateway.bind`/`gateway.port` — or `--url` when the
 * gateway was started with `--port`/`--bind` or sits behind a proxy.
 */
import { isIP } from 'node:net';
import { ConfigFileMissing, loadConfigFile } from '../config/load.js';
import { locateConfigFile } from '../config/paths.js';
import type { ResolvedConfig } from '../config/resolved.js';
import { CliError } from './cli-error.js';

export interface TargetOptions {
  config?: string;
  url?: string;
}

export interface GatewayTarget {
  config: ResolvedConfig;
  /** `http://HOST:PORT`, no trailing slash. */
  baseUrl: string;
}

export function resolveTarget(options: TargetOptions, env: NodeJS.ProcessEnv): GatewayTarget {
  const path = locateConfigFile(options.config, env);
  let loaded: ReturnType<typeof loadConfigFile>;
  try {
    loaded = loadConfigFile(path, env);
  } catch (error) {
    if (!(error instanceof ConfigFileMissing)) throw error;
    throw new CliError(
      `no config file at ${path} (pass --config FILE, or start the gateway once with \`agentgate run\` to write one)`,
    );
  }
  if (!loaded.ok) {
    throw new CliError(
      `${path} is not valid (see \`agentgate config check\`):\n  ${loaded.problems.join('\n  ')}`,
    );
  }
  return {
    config: loaded.config,
    baseUrl: options.url ? normaliseUrl(options.url) : gatewayUrl(loaded.config),
  };
}

/** The address a client on this host reaches the gateway at, from its listen address. */
export function gatewayUrl(config: ResolvedConfig): string {
  const { bind, port } = config.gateway;
  if (port === 0) {
    throw new CliError('gateway.port is 0 (a random port chosen at start): pass --url http://HOST:PORT');
  }
  return `http://${connectHost(bind)}:${port}`;
}

/** A wildcard listen address is reached through loopback; an IPv6 literal needs brackets. */
function connectHost(bind: string): string {
  if (bind === '0.0.0.0' || bind === '') return '127.0.0.1';
  if (bind === '::' || bind === '[::]') return '[::1]';
  if (isIP(bind) === 6) return `[${bind}]`;
  return bind;
}

function normaliseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`--url: "${url}" is not a URL (e.g. http://127.0.0.1:18790)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CliError('--url: must start with http:// or https://');
  }
  if (parsed.username || parsed.password) {
    throw new CliError('--url: must not carry credentials; the tokens come from the config');
  }
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
}
