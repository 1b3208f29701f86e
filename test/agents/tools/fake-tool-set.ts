/**
 * An in-memory RunToolSet (src/tools/types.ts) for the loop's tests: each tool answers
 * with a function of its arguments, and every call is recorded. Like the real one, a
 * tool's own failure comes back as `status: "error"`, and only an abort throws.
 */
import type { RunToolSet, ToolOutcome, ToolSpec } from '../../../src/tools/types.js';

export interface FakeTool {
  description?: string;
  answer: (args: Record<string, unknown>, signal: AbortSignal) => ToolOutcome | Promise<ToolOutcome>;
}

export interface FakeToolSet extends RunToolSet {
  calls: { name: string; arguments: Record<string, unknown> }[];
}

export function fakeToolSet(
  tools: Record<string, FakeTool>,
  options: { maxSteps?: number; approval?: string[] } = {},
): FakeToolSet {
  const calls: FakeToolSet['calls'] = [];
  const specs: ToolSpec[] = Object.entries(tools).map(([name, tool]) => ({
    name,
    description: tool.description ?? `the ${name} tool`,
    inputSchema: { type: 'object', properties: {} },
  }));
  return {
    tools: specs,
    maxSteps: options.maxSteps ?? 8,
    calls,
    needsApproval: (name) => options.approval?.includes(name) ?? false,
    async call(name, args, signal) {
      signal.throwIfAborted();
      calls.push({ name, arguments: args });
      const tool = tools[name];
      if (!tool) return { status: 'error', text: `no tool ${name}` };
      return tool.answer(args, signal);
    },
  };
}

/** A tool that answers only when the signal aborts: then it throws its reason, as the real one does. */
export function hangingTool(): FakeTool {
  return {
    answer: (_args, signal) =>
      new Promise<ToolOutcome>((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      }),
  };
}
