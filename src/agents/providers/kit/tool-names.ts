/**
 * Tool names as the providers' APIs take them (docs/agent-runs.md, "Tools"). Both APIs want
 * a function name matching `^[a-zA-Z0-9_-]{1,64}$`, and a tool's own name is
 * `<server>.<tool>` (its tool part may hold `.` and `/` too). The first `.` becomes `__`
 * (`repo.get_pull_request` → `repo__get_pull_request`), any other character outside the
 * alphabet `_`, and the result is cut to 64. Two tools that would get one name are told
 * apart by a numbered suffix, so the mapping, made once per request, always decodes back.
 */
import type { ModelToolCall, ToolSpec } from './types.js';

export const WIRE_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_WIRE_CHARS = 64;

export class ToolNames {
  private readonly toWire = new Map<string, string>();
  private readonly fromWire = new Map<string, string>();

  constructor(tools: readonly ToolSpec[]) {
    for (const { name } of tools) {
      if (this.toWire.has(name)) continue;
      const wire = this.unused(sanitise(name));
      this.toWire.set(name, wire);
      this.fromWire.set(wire, name);
    }
  }

  /**
   * The name sent for a tool. A name that was not offered (one the model made up earlier in
   * the conversation) is sanitised the same way, so the request stays valid.
   */
  encode(name: string): string {
    return this.toWire.get(name) ?? sanitise(name);
  }

  /** The tool a name from the model stands for; the name itself when no offered tool has it. */
  decode(wire: string): string {
    return this.fromWire.get(wire) ?? wire;
  }

  private unused(base: string): string {
    if (!this.fromWire.has(base)) return base;
    for (let n = 2; ; n++) {
      const suffix = `_${n}`;
      const candidate = `${base.slice(0, MAX_WIRE_CHARS - suffix.length)}${suffix}`;
      if (!this.fromWire.has(candidate)) return candidate;
    }
  }
}

function sanitise(name: string): string {
  const wire = name
    .replace('.', '__')
    .replace(/[^a-zA-Z0-9_-]/g, '_')
    .slice(0, MAX_WIRE_CHARS);
  return wire || '_';
}

/** A call as the model returned it, its name decoded and its arguments read. */
export function modelCall(names: ToolNames, id: string, wireName: string, raw: string): ModelToolCall {
  const parsed = parseToolArguments(raw);
  const call: ModelToolCall = { id, name: names.decode(wireName), arguments: parsed.arguments };
  if (parsed.invalid !== undefined) call.invalidArguments = parsed.invalid;
  return call;
}

/**
 * Arguments the model wrote as a JSON string (Chat Completions' `function.arguments`, a
 * streamed `tool_use`'s joined `partial_json`): an object, or why not. Empty means none.
 */
export function parseToolArguments(raw: string): { arguments: Record<string, unknown>; invalid?: string } {
  if (raw.trim() === '') return { arguments: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    return { arguments: {}, invalid: `the arguments are not valid JSON (${(error as Error).message})` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { arguments: {}, invalid: 'the arguments are not a JSON object' };
  }
  return { arguments: parsed as Record<string, unknown> };
}
