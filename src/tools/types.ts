/**
 * What a run's loop sees of tools (docs/tools.md): the tools it may offer the model, and one
 * way to call them. The MCP servers behind them (tools/mcp/) stay out of the loop's sight.
 */
import type { AgentToolsConfig } from './config.js';

/** A tool as offered to the model. `name` is `<server>.<tool>`; providers may encode it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** The tool's JSON Schema for its arguments (an object schema), as its server gave it. */
  inputSchema: Record<string, unknown>;
}

/** How a call ended. `error` and `denied` are given to the model; they do not fail the run. */
export type ToolCallStatus = 'ok' | 'error' | 'denied';

export interface ToolOutcome {
  status: ToolCallStatus;
  /** The text the model gets: the tool's text content, or what went wrong, or the denial. */
  text: string;
}

/** One run's tools: the agent's allow-list narrowed by the mapping's `tools`. */
export interface RunToolSet {
  readonly tools: readonly ToolSpec[];
  /** Model calls the loop may make (the agent's `tools.maxSteps`). */
  readonly maxSteps: number;
  /** Whether a call of this tool waits for an operator's decision (the agent's `tools.approval`). */
  needsApproval(name: string): boolean;
  /**
   * Calls the tool with MCP `tools/call`. Never throws for the tool's own failures (an
   * `isError` result, a JSON-RPC error, a dead server, a call over the time limit): those
   * come back as `status: "error"`. Throws only when `signal` aborts.
   */
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutcome>;
}

/** Builds a run's tool set; undefined when the agent has no tools (one model call, as before). */
export interface ToolSource {
  forRun(
    agentTools: AgentToolsConfig | undefined,
    mappingTools?: readonly string[],
  ): Promise<RunToolSet | undefined>;
  /** Stops every server it started. */
  close(): Promise<void>;
}
