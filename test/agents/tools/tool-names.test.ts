/**
 * Tool names as the providers take them (src/agents/providers/kit/tool-names.ts):
 * `^[a-zA-Z0-9_-]{1,64}$`, reversible per request, collisions told apart.
 */
import { describe, expect, it } from 'vitest';
import {
  parseToolArguments,
  ToolNames,
  WIRE_TOOL_NAME,
} from '../../../src/agents/providers/kit/tool-names.js';

const spec = (name: string) => ({ name, description: '', inputSchema: { type: 'object' } });

describe('tool names on the wire', () => {
  it('encodes <server>.<tool> as <server>__<tool> and decodes it back', () => {
    const names = new ToolNames([spec('repo.get_pull_request')]);
    expect(names.encode('repo.get_pull_request')).toBe('repo__get_pull_request');
    expect(names.decode('repo__get_pull_request')).toBe('repo.get_pull_request');
  });

  it('replaces characters the APIs refuse and cuts to 64, every name valid', () => {
    const long = `docs.${'a'.repeat(100)}`;
    const names = new ToolNames([spec('fs.read/file.v2'), spec(long)]);
    expect(names.encode('fs.read/file.v2')).toBe('fs__read_file_v2');
    expect(names.encode(long)).toHaveLength(64);
    for (const name of ['fs.read/file.v2', long]) {
      expect(names.encode(name)).toMatch(WIRE_TOOL_NAME);
      expect(names.decode(names.encode(name))).toBe(name);
    }
  });

  it('tells apart tools that would get the same name, and still decodes each', () => {
    const tools = ['a.b/c', 'a.b.c', 'a.b_c', `x.${'y'.repeat(70)}1`, `x.${'y'.repeat(70)}2`];
    const names = new ToolNames(tools.map(spec));
    const wire = tools.map((tool) => names.encode(tool));
    expect(new Set(wire).size).toBe(tools.length);
    expect(wire.slice(0, 3)).toEqual(['a__b_c', 'a__b_c_2', 'a__b_c_3']);
    for (const [i, tool] of tools.entries()) {
      expect(wire[i]).toMatch(WIRE_TOOL_NAME);
      expect(names.decode(wire[i] as string)).toBe(tool);
    }
  });

  it('leaves a name no offered tool has as it is (the loop refuses it)', () => {
    const names = new ToolNames([spec('repo.get_pull_request')]);
    expect(names.decode('shell__exec')).toBe('shell__exec');
  });

  it('reads arguments: an object, empty for none, or why not', () => {
    expect(parseToolArguments('{"a":1}')).toEqual({ arguments: { a: 1 } });
    expect(parseToolArguments('')).toEqual({ arguments: {} });
    expect(parseToolArguments('[1]')).toEqual({
      arguments: {},
      invalid: 'the arguments are not a JSON object',
    });
    expect(parseToolArguments('{"a":').invalid).toMatch(/^the arguments are not valid JSON \(/);
  });
});
