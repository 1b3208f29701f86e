/**
 * Tools from MCP servers, for the runs of agents that have `tools` (docs/tools.md): the
 * `ToolSource` the gateway builds from its config. `forRun` starts the servers an agent's
 * selectors name (each once, then kept) and offers the tools they select; a server that
 * cannot start is left out of that run's tools and logged (`agentgate doctor` names it).
 */
import type { Logger } from '../log.js';
import type { AgentToolsConfig, ToolsConfig } from './config.js';
import { DEFAULT_LIMITS, type ServerLimits } from './mcp/limits.js';
import { ServerManager } from './mcp/manager.js';
import { RunTools } from './run-tools.js';
import { isOffered, serversFor } from './selectors.js';
import type { ToolSource, ToolSpec } from './types.js';

/** What the source reads of the gateway's config (a `ResolvedConfig` is one). */
export interface ToolSourceConfig {
  /** A stdio server's working directory when its `cwd` is not set, and what a relative one is relative to. */
  configDir: string;
  tools: ToolsConfig;
}

export interface ToolSourceOptions {
  /** The call limit, start limit and restart backoff; tests shorten them. */
  limits?: Partial<ServerLimits>;
}

export interface McpToolSource extends ToolSource {
  /**
   * A reloaded config's `tools.servers`: a server whose config changed is started again on
   * next use (the old process stops once its calls in flight end); a removed one is stopped.
   */
  reload(config: ToolSourceConfig): void;
  /** Starts a server if needed and lists its tools, or says why it cannot start (doctor). */
  probe(server: string): Promise<{ ok: true; tools: string[] } | { ok: false; reason: string }>;
}

export function createToolSource(
  config: ToolSourceConfig,
  log: Logger,
  options: ToolSourceOptions = {},
): McpToolSource {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const servers = new ServerManager(config.tools.servers, { configDir: config.configDir, log, limits });

  const toolsOf = async (server: string, agentTools: AgentToolsConfig, mappingTools?: readonly string[]) => {
    const connection = servers.get(server);
    if (!connection) return [];
    try {
      const listed = await connection.tools();
      return listed
        .map((tool): ToolSpec => ({ ...tool, name: `${server}.${tool.name}` }))
        .filter((spec) => isOffered(spec.name, agentTools.allow, mappingTools));
    } catch (error) {
      log.warn({ server, error: (error as Error).message }, 'tools: a server is left out of this run');
      return [];
    }
  };

  return {
    async forRun(agentTools, mappingTools) {
      if (!agentTools) return undefined;
      const names = serversFor(servers.names(), agentTools.allow, mappingTools);
      const listed = await Promise.all(names.map((server) => toolsOf(server, agentTools, mappingTools)));
      return new RunTools(listed.flat(), agentTools, (server) => servers.get(server));
    },
    reload(next) {
      const changes = servers.reload(next.tools.servers);
      if (changes.changed.length + changes.added.length + changes.removed.length > 0) {
        log.info(changes, 'config reloaded: tools.servers applied (changed servers start again on next use)');
      }
    },
    async probe(server) {
      const connection = servers.get(server);
      if (!connection) return { ok: false, reason: `no server "${server}" in tools.servers` };
      const probed = await connection.probe();
      return probed.ok ? { ok: true, tools: probed.tools.map((tool) => tool.name) } : probed;
    },
    close: () => servers.close(),
  };
}
