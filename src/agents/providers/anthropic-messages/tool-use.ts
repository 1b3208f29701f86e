/**
 * Tool use in the Messages API format (docs/agent-runs.md, "Tools"): the tools offered as
 * `tools: [{name, description, input_schema}]`, and the calls the model asks for as
 * `tool_use` content blocks (`{id, name, input}`, `stop_reason: "tool_use"`) — or, streamed,
 * a `content_block_start` whose block is a `tool_use`, its input in `input_json_delta`
 * `partial_json` fragments to be joined, up to its `content_block_stop`.
 */
import { modelCall, type ToolNames } from '../kit/tool-names.js';
import type { ModelToolCall, ToolSpec } from '../kit/types.js';

export function wireTools(tools: readonly ToolSpec[], names: ToolNames): unknown[] {
  return tools.map((tool) => ({
    name: names.encode(tool.name),
    description: tool.description,
    input_schema: tool.inputSchema,
  }));
}

interface WireToolUse {
  type?: unknown;
  id?: unknown;
  name?: unknown;
  input?: unknown;
}

/** The `tool_use` blocks of a reply's content, in order. */
export function toolUsesOf(content: readonly unknown[], names: ToolNames): ModelToolCall[] {
  return content.flatMap((block, position) => {
    const use = block as WireToolUse | null;
    if (use?.type !== 'tool_use' || typeof use.name !== 'string' || !use.name) return [];
    const id = typeof use.id === 'string' && use.id ? use.id : `toolu_${position}`;
    return [modelCall(names, id, use.name, JSON.stringify(use.input ?? {}))];
  });
}

interface PartialUse {
  id: string;
  name: string;
  fragments: string[];
}

/** Streamed `tool_use` blocks, by their content block index. */
export class StreamedToolUses {
  private readonly byIndex = new Map<number, PartialUse>();

  /** A `content_block_start`: only `tool_use` blocks are kept. */
  start(index: unknown, block: unknown): void {
    const use = block as WireToolUse | null;
    if (typeof index !== 'number' || use?.type !== 'tool_use' || typeof use.name !== 'string') return;
    this.byIndex.set(index, { id: typeof use.id === 'string' ? use.id : '', name: use.name, fragments: [] });
  }

  /** An `input_json_delta`'s `partial_json`. */
  fragment(index: unknown, partialJson: unknown): void {
    if (typeof index !== 'number' || typeof partialJson !== 'string') return;
    this.byIndex.get(index)?.fragments.push(partialJson);
  }

  calls(names: ToolNames): ModelToolCall[] {
    return [...this.byIndex.entries()]
      .sort(([a], [b]) => a - b)
      .filter(([, use]) => use.name)
      .map(([index, use]) => modelCall(names, use.id || `toolu_${index}`, use.name, use.fragments.join('')));
  }
}
