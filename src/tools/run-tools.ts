/**
 * One run's tools (docs/tools.md, "Choosing tools"): the specs offered to the model and the
 * way to call them. A call of a tool the run was not offered — a model naming another —
 * is an error result, never a call: what the run may do was fixed by the config alone.
 */
import type { AgentToolsConfig } from './config.js';
import type { ServerConnection } from './mcp/connection.js';
import { anyMatches, splitToolName } from './selectors.js';
import type { RunToolSet, ToolOutcome, ToolSpec } from './types.js';

export class RunTools implements RunToolSet {
  readonly maxSteps: number;
  private readonly offered: Set<string>;

  constructor(
    readonly tools: readonly ToolSpec[],
    private readonly agentTools: AgentToolsConfig,
    /** The server's connection at call time: a reload may have replaced it since the run began. */
    private readonly connectionOf: (server: string) => ServerConnection | undefined,
  ) {
    this.maxSteps = agentTools.maxSteps;
    this.offered = new Set(tools.map((tool) => tool.name));
  }

  needsApproval(name: string): boolean {
    return anyMatches(this.agentTools.approval, name);
  }

  async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutcome> {
    if (signal.aborted) throw signal.reason;
    if (!this.offered.has(name))
      return { status: 'error', text: `${name}: no such tool is offered to this run` };
    const { server, tool } = splitToolName(name);
    const connection = this.connectionOf(server);
    if (!connection) return { status: 'error', text: `${name}: server "${server}" is no longer configured` };
    return connection.call(tool, args, signal);
  }
}
