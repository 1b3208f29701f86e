/**
 * Tool calling in the Chat Completions format (docs/agent-runs.md, "Tools"): the tools
 * offered as `tools: [{type: "function", function: {name, description, parameters}}]`, and
 * the calls the model asks for, `message.tool_calls[]` (`{id, type: "function", function:
 * {name, arguments}}`, the arguments a JSON string) — or, streamed, `delta.tool_calls[]`
 * pieces: each carries the `index` of its call, the first one its `id` and `name`, and the
 * arguments come in fragments to be joined.
 */
import { modelCall, type ToolNames } from '../kit/tool-names.js';
import type { ModelToolCall, ToolSpec } from '../kit/types.js';

export function wireTools(tools: readonly ToolSpec[], names: ToolNames): unknown[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: names.encode(tool.name), description: tool.description, parameters: tool.inputSchema },
  }));
}

interface WireToolCall {
  id?: unknown;
  type?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

/** `message.tool_calls` of a reply; malformed arguments are kept as such (`invalidArguments`). */
export function toolCallsOf(toolCalls: unknown, names: ToolNames): ModelToolCall[] {
  if (!Array.isArray(toolCalls)) return [];
  return toolCalls.flatMap((entry: WireToolCall | null, position) => {
    const name = entry?.function?.name;
    if (typeof name !== 'string' || !name) return [];
    const id = typeof entry?.id === 'string' && entry.id ? entry.id : `call_${position}`;
    const raw = entry?.function?.arguments;
    return [modelCall(names, id, name, typeof raw === 'string' ? raw : JSON.stringify(raw ?? {}))];
  });
}

interface PartialCall {
  id: string;
  name: string;
  fragments: string[];
}

/** Streamed `delta.tool_calls` pieces, put together by their `index`. */
export class StreamedToolCalls {
  private readonly byIndex = new Map<number, PartialCall>();

  add(pieces: unknown): void {
    if (!Array.isArray(pieces)) return;
    for (const piece of pieces as (WireToolCall & { index?: unknown })[]) {
      const index = typeof piece?.index === 'number' ? piece.index : 0;
      let call = this.byIndex.get(index);
      if (!call) {
        call = { id: '', name: '', fragments: [] };
        this.byIndex.set(index, call);
      }
      if (typeof piece.id === 'string' && piece.id && !call.id) call.id = piece.id;
      const { name, arguments: fragment } = piece.function ?? {};
      if (typeof name === 'string' && name && !call.name) call.name = name;
      if (typeof fragment === 'string') call.fragments.push(fragment);
    }
  }

  /** The calls, in index order; a piece that never named its tool is dropped. */
  calls(names: ToolNames): ModelToolCall[] {
    return [...this.byIndex.entries()]
      .sort(([a], [b]) => a - b)
      .filter(([, call]) => call.name)
      .map(([index, call]) =>
        modelCall(names, call.id || `call_${index}`, call.name, call.fragments.join('')),
      );
  }
}
