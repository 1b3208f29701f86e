/**
 * What `config check` says of tools (docs/tools.md, "Checking the config"): a selector
 * naming a server that `tools.servers` does not have is a problem (a typo would silently
 * offer nothing); an agent with `tools` whose model's provider takes none (`command`,
 * `echo`) is a warning. Also resolves each stdio server's `cwd` against the config dir.
 */
import type { AgentToolsConfig, ToolsConfig } from './config.js';
import { exactServerOf } from './selectors.js';

/** Provider APIs that cannot offer tools to a model. */
export const TOOLLESS_APIS: readonly string[] = ['command', 'echo'];

/** An agent's `model`: a reference or a chain (docs/configuration.md, "Models"). */
type ModelSetting = string | { primary: string; fallbacks: readonly string[] };

/** The parts of the config these rules read (the schema's output is one). */
export interface ToolRulesConfig {
  tools: ToolsConfig;
  models: { providers: Record<string, { api: string }> };
  agents: {
    defaults: { model?: ModelSetting; models?: readonly (string | { id: string; alias?: string })[] };
    list: readonly { id: string; model?: ModelSetting; tools?: AgentToolsConfig }[];
  };
  hooks: { mappings: readonly { tools?: readonly string[] }[] };
}

export function toolConfigRules(config: ToolRulesConfig): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const servers = Object.keys(config.tools.servers);
  const checkSelectors = (selectors: readonly string[] | undefined, at: string) => {
    selectors?.forEach((selector, index) => {
      const server = exactServerOf(selector);
      if (server === undefined || servers.includes(server)) return;
      problems.push(
        `${at}[${index}]: "${selector}" names no server in tools.servers (${servers.length ? `configured: ${servers.join(', ')}` : 'none is configured'})`,
      );
    });
  };
  config.agents.list.forEach((agent, index) => {
    checkSelectors(agent.tools?.allow, `agents.list[${index}].tools.allow`);
    checkSelectors(agent.tools?.approval, `agents.list[${index}].tools.approval`);
  });
  config.hooks.mappings.forEach((mapping, index) => {
    checkSelectors(mapping.tools, `hooks.mappings[${index}].tools`);
  });
  return { problems, warnings: toollessAgents(config).map((agent) => agent.warning) };
}

/** The agents with `tools` whose model's provider takes none (any model of its chain), each with the warning to show. */
export function toollessAgents(config: ToolRulesConfig): { id: string; warning: string }[] {
  const aliases = new Map<string, string>();
  for (const entry of config.agents.defaults.models ?? []) {
    if (typeof entry !== 'string' && entry.alias) aliases.set(entry.alias, entry.id);
  }
  const found: { id: string; warning: string }[] = [];
  config.agents.list.forEach((agent, index) => {
    if (!agent.tools) return;
    const setting = agent.model ?? config.agents.defaults.model;
    if (setting === undefined) return;
    const chain = typeof setting === 'string' ? [setting] : [setting.primary, ...setting.fallbacks];
    for (const written of chain) {
      const model = aliases.get(written) ?? written;
      const provider = model.slice(0, model.indexOf('/'));
      const api = config.models.providers[provider]?.api;
      if (api === undefined || !TOOLLESS_APIS.includes(api)) continue;
      found.push({
        id: agent.id,
        warning: `agents.list[${index}].tools: its model "${model}" is of a provider with api "${api}", which takes no tools`,
      });
      return;
    }
  });
  return found;
}

/** `tools` with each stdio server's `cwd` resolved (the config dir when not set). */
export function resolveToolPaths(tools: ToolsConfig, resolvePath: (value: string) => string): ToolsConfig {
  const servers = Object.fromEntries(
    Object.entries(tools.servers).map(([name, server]) => [
      name,
      server.transport === 'stdio' ? { ...server, cwd: resolvePath(server.cwd ?? '.') } : server,
    ]),
  );
  return { ...tools, servers };
}
