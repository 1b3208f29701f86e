import { describe, expect, it } from 'vitest';
import { createProvider, splitModelRef } from '../../../src/agents/providers/index.js';

describe('splitModelRef', () => {
  it('splits at the first slash only', () => {
    expect(splitModelRef('openai/gpt-4o-mini')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(splitModelRef('openrouter/meta-llama/llama-3-8b')).toEqual({
      provider: 'openrouter',
      model: 'meta-llama/llama-3-8b',
    });
  });

  it.each(['gpt-4o', '/gpt-4o', 'openai/'])('refuses %s', (ref) => {
    expect(() => splitModelRef(ref)).toThrow(`model reference "${ref}" must be "<provider>/<model>"`);
  });
});

describe('createProvider', () => {
  it('builds each api under the configured name', () => {
    expect(createProvider('a', { api: 'openai-chat', baseUrl: 'http://127.0.0.1:1/v1' }).name).toBe('a');
    expect(
      createProvider('b', { api: 'anthropic-messages', baseUrl: 'http://127.0.0.1:1', maxTokens: 10 }).name,
    ).toBe('b');
    expect(createProvider('c', { api: 'command', command: ['true'] }).name).toBe('c');
    expect(createProvider('d', { api: 'echo' }).name).toBe('d');
  });
});
