/**
 * The gateway's tool source with the MCP client loaded on first use (docs/performance.md,
 * "Start-up and idle memory"): the SDK, with its JSON-schema validator and its own zod
 * schemas, is a large part of what a gateway would otherwise hold from start-up, and a
 * gateway whose agents have no `tools` never needs it.
 *
 * The source (source.ts) is built the first time it has something to do — a run of an agent
 * with `tools`, a probe, or a reload while servers are configured — from the config it was
 * given, and every later reload is handed to it in order, so it behaves (and logs) as one
 * built at start-up would.
 */
import type { Logger } from '../log.js';
import type { McpToolSource, ToolSourceConfig } from './source.js';

const hasServers = (config: ToolSourceConfig) => Object.keys(config.tools.servers).length > 0;

export function createLazyToolSource(config: ToolSourceConfig, log: Logger): McpToolSource {
  let initial = config;
  let source: Promise<McpToolSource> | undefined;
  const load = () =>
    (source ??= import('./source.js').then(({ createToolSource }) => createToolSource(initial, log)));

  return {
    async forRun(agentTools, mappingTools) {
      if (!agentTools) return undefined;
      return (await load()).forRun(agentTools, mappingTools);
    },
    reload(next) {
      // No server before or after: nothing a built source would do, so nothing to load.
      if (!source && !hasServers(initial) && !hasServers(next)) {
        initial = next;
        return;
      }
      source = load().then((loaded) => {
        loaded.reload(next);
        return loaded;
      });
    },
    async probe(server) {
      return (await load()).probe(server);
    },
    async close() {
      // Never loaded: no server was started.
      if (source) await (await source).close();
    },
  };
}
