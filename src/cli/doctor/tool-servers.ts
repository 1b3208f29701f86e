/**
 * Doctor's lines for tools (docs/tools.md, "doctor"): one probe per MCP server — started
 * (stdio) or connected (http) as a run would, its tools listed by name, or why it cannot
 * start — and one local line naming selectors of unknown servers and agents with tools
 * whose model takes none (`command`, `echo`). Server output and secrets are never shown.
 */
import { resolveConfigPath } from '../../config/paths.js';
import { createLogger } from '../../log.js';
import { resolveToolPaths, toolConfigRules, toollessAgents } from '../../tools/config-rules.js';
import { createToolSource } from '../../tools/source.js';
import type { ConfigSource } from './config-source.js';
import { type CheckResult, fail, ok, type Probe, warn } from './types.js';

/** Tool names shown per server; the rest are counted. */
const MAX_NAMES = 20;

export function toolServerProbes(source: ConfigSource, timeoutMs: number): Probe[] {
  const raw = source.raw;
  if (!raw) return [];
  const tools = resolveToolPaths(raw.tools, (path) => resolveConfigPath(path, source.configDir));
  return Object.entries(tools.servers).map(([server, config]) => {
    const name = `tools server ${server}`;
    return {
      name,
      run: async (signal) => {
        const one = createToolSource(
          { configDir: source.configDir, tools: { ...tools, servers: { [server]: config } } },
          createLogger('silent'),
          { limits: { startTimeoutMs: timeoutMs } },
        );
        // Doctor gives up on a probe at its time limit: the server is stopped then too.
        signal.addEventListener('abort', () => void one.close(), { once: true });
        try {
          const probed = await one.probe(server);
          if (!probed.ok) return fail(name, probed.reason.replace(`server "${server}" `, ''));
          return ok(name, `${config.transport}, ${listed(probed.tools)}`);
        } finally {
          await one.close();
        }
      },
    };
  });
}

/** The selectors and agents of the config, when it has tools at all. */
export function toolsCheck(source: ConfigSource): CheckResult | undefined {
  const raw = source.raw;
  if (!raw) return undefined;
  const withTools = raw.agents.list.filter((agent) => agent.tools);
  const servers = Object.keys(raw.tools.servers);
  if (withTools.length === 0 && servers.length === 0) return undefined;
  const { problems } = toolConfigRules(raw);
  if (problems.length > 0) {
    return { ...fail('tools', 'selectors name servers that are not configured'), details: problems };
  }
  const toolless = toollessAgents(raw);
  if (toolless.length > 0) {
    return {
      ...warn(
        'tools',
        `agent ${toolless.map((agent) => agent.id).join(', ')}: tools, but a model that takes none`,
      ),
      details: toolless.map((agent) => agent.warning),
    };
  }
  const agents = withTools.length
    ? `agents with tools: ${withTools.map((agent) => agent.id).join(', ')}`
    : 'no agent has tools';
  return ok('tools', `${servers.length} server(s); ${agents}`);
}

function listed(names: string[]): string {
  if (names.length === 0) return 'no tools';
  const shown = names.slice(0, MAX_NAMES).join(', ');
  const more = names.length > MAX_NAMES ? `, and ${names.length - MAX_NAMES} more` : '';
  return `${names.length} tool(s): ${shown}${more}`;
}
