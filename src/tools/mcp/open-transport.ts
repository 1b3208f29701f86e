/**
 * A server's transport, from its config (docs/tools.md, "Servers"): a child process for
 * `stdio`, with exactly the environment the config gives it, or Streamable HTTP with the
 * configured headers. `secrets` are the values no log line or error text may show.
 */
import { resolve } from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from '../../log.js';
import type { ToolServerConfig } from '../config.js';
import { MINIMAL_PATH } from './limits.js';
import { stderrToLog } from './stderr-log.js';
import { ExactEnvStdioTransport } from './stdio-transport.js';

export interface OpenedTransport {
  transport: Transport;
  /** How a stdio server's process ended, once it has; undefined for HTTP. */
  ended(): string | undefined;
}

export function openTransport(
  name: string,
  config: ToolServerConfig,
  configDir: string,
  log: Logger,
): OpenedTransport {
  if (config.transport === 'http') {
    const transport = new StreamableHTTPClientTransport(new URL(config.url), {
      requestInit: { headers: config.headers },
    });
    return { transport, ended: () => undefined };
  }
  const transport = new ExactEnvStdioTransport(
    { command: config.command, env: serverEnv(config.env), cwd: resolve(configDir, config.cwd ?? '.') },
    stderrToLog(name, log, secretsOf(config)),
  );
  return { transport, ended: () => transport.ended };
}

/** A stdio server's whole environment: its `env`, and `PATH` when that has none. */
export function serverEnv(env: Record<string, string>): Record<string, string> {
  return 'PATH' in env ? { ...env } : { ...env, PATH: MINIMAL_PATH };
}

/** The values that must never be logged or shown: every `env` value and every header value. */
export function secretsOf(config: ToolServerConfig): string[] {
  return Object.values(config.transport === 'stdio' ? config.env : config.headers);
}
