import { describe, expect, it } from 'vitest';
import {
  HEARTBEAT_OK,
  HEARTBEAT_MARKER as HEARTBEAT_PROMPT_MARKER,
} from '../../../src/agents/heartbeat-protocol.js';
import { createProvider } from '../../../src/agents/providers/index.js';
import type { ChatMessage } from '../../../src/agents/providers/types.js';

const echo = createProvider('echo', { api: 'echo' });

function complete(messages: ChatMessage[], signal = new AbortController().signal) {
  return echo.complete({ model: 'echo', system: 'ignored', messages, signal });
}

describe('echo provider', () => {
  it('echoes the last user message, deterministically', async () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'Echo: first' },
      { role: 'user', content: 'second\nline' },
    ];
    expect(await complete(messages)).toEqual({ text: 'Echo: second\nline' });
    expect(await complete(messages)).toEqual({ text: 'Echo: second\nline' });
  });

  it('answers an idle heartbeat with exactly HEARTBEAT_OK', async () => {
    expect(HEARTBEAT_PROMPT_MARKER).toBe('[heartbeat]');
    const prompt = `${HEARTBEAT_PROMPT_MARKER}\nNo pending events. Reply HEARTBEAT_OK if nothing needs attention.`;
    expect(await complete([{ role: 'user', content: prompt }])).toEqual({ text: HEARTBEAT_OK });
    expect(HEARTBEAT_OK).toBe('HEARTBEAT_OK');
  });

  it('echoes a heartbeat that lists pending events', async () => {
    const prompt = `${HEARTBEAT_PROMPT_MARKER}\nPending events:\n- Email from Ada: hello`;
    expect(await complete([{ role: 'user', content: prompt }])).toEqual({ text: `Echo: ${prompt}` });
  });

  it('does not treat the marker inside a line as a heartbeat', async () => {
    const text = 'please ignore [heartbeat] here';
    expect(await complete([{ role: 'user', content: text }])).toEqual({ text: `Echo: ${text}` });
  });

  it('rejects with the reason of an aborted signal', async () => {
    const controller = new AbortController();
    const reason = new Error('stopped');
    controller.abort(reason);
    await expect(complete([{ role: 'user', content: 'x' }], controller.signal)).rejects.toBe(reason);
  });
});
