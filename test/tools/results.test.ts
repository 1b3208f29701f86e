/**
 * What the model gets of a `tools/call` (docs/tools.md, "What the model gets"): text joined,
 * notes for other content, structured content as JSON, `isError` as an error, long text cut;
 * and the restart backoff (docs/tools.md, "When servers run").
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { backoffDelay, MAX_RESULT_CHARS, RESTART_BACKOFF_MS } from '../../src/tools/mcp/limits.js';
import { describeFailure, isConnectionFailure, outcomeOf } from '../../src/tools/mcp/results.js';

describe('outcomeOf', () => {
  it('joins text and notes what is not text', () => {
    const outcome = outcomeOf({
      content: [
        { type: 'text', text: 'first' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'file:///repo/README.md', name: 'README' },
        { type: 'resource', resource: { uri: 'file:///a.txt', text: 'embedded text' } },
        { type: 'resource', resource: { uri: 'file:///a.bin', blob: 'AAAA' } },
        { type: 'hologram' },
      ],
    });
    expect(outcome).toEqual({
      status: 'ok',
      text: [
        'first',
        '[image omitted]',
        '[audio omitted]',
        '[resource link: file:///repo/README.md]',
        'embedded text',
        '[binary resource omitted: file:///a.bin]',
        '[hologram content omitted]',
      ].join('\n'),
    });
  });

  it('structured content alone is given as JSON', () => {
    expect(outcomeOf({ content: [], structuredContent: { open: 3 } })).toEqual({
      status: 'ok',
      text: '{"open":3}',
    });
  });

  it('isError is an error result, with a sentence when it says nothing', () => {
    expect(outcomeOf({ content: [{ type: 'text', text: 'nope' }], isError: true })).toEqual({
      status: 'error',
      text: 'nope',
    });
    expect(outcomeOf({ content: [], isError: true })).toEqual({
      status: 'error',
      text: 'the tool reported an error without saying what it was',
    });
  });

  it('cuts a long text and says how much was cut', () => {
    const outcome = outcomeOf({ content: [{ type: 'text', text: 'x'.repeat(MAX_RESULT_CHARS + 25) }] });
    expect(outcome.text).toBe(`${'x'.repeat(MAX_RESULT_CHARS)}\n[25 more characters cut]`);
  });
});

describe('failures', () => {
  it('a JSON-RPC error is the server’s answer; a closed connection and a network error are not', () => {
    expect(isConnectionFailure(new McpError(-32602, 'bad arguments'))).toBe(false);
    expect(isConnectionFailure(new McpError(-32000, 'Connection closed'))).toBe(true);
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    expect(isConnectionFailure(refused)).toBe(true);
    expect(describeFailure(refused)).toBe('ECONNREFUSED');
    expect(describeFailure(new McpError(-32602, 'bad arguments'))).toBe(
      'bad arguments (JSON-RPC error -32602)',
    );
  });

  it('an answer of the wrong shape is neither a connection failure nor shown raw', () => {
    const invalid = Object.assign(new Error('[{"path":["content"]}]'), { issues: [{ path: ['content'] }] });
    expect(isConnectionFailure(invalid)).toBe(false);
    expect(describeFailure(invalid)).toBe(
      'the server answered with something that is not a valid MCP result',
    );
  });
});

describe('backoffDelay', () => {
  it('0 before any failure, then doubling from the initial delay up to the maximum', () => {
    const delays = [0, 1, 2, 3, 4, 10, 50].map((failures) => backoffDelay(failures, RESTART_BACKOFF_MS));
    expect(delays).toEqual([0, 500, 1000, 2000, 4000, 30_000, 30_000]);
  });
});
