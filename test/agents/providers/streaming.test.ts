/**
 * The HTTP providers' streamed calls (docs/agent-runs.md, "Streamed calls") against the
 * loopback fakes speaking each API's streaming wire format: the pieces handed out as
 * they arrive and joined as the reply, the request asking for a stream, and the ways a
 * stream fails (an error event or chunk, a dropped connection, a refusal before it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropicMessagesProvider } from '../../../src/agents/providers/anthropic-messages/client.js';
import { createOpenAiChatProvider } from '../../../src/agents/providers/openai-chat/client.js';
import { ProviderError } from '../../../src/agents/providers/types.js';
import { type FakeAnthropic, startFakeAnthropic } from '../../fakes/anthropic.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../fakes/openai.js';

let openai: FakeOpenAi;
let anthropic: FakeAnthropic;
beforeAll(async () => {
  openai = await startFakeOpenAi({ apiKey: 'sk-test', streamDelayMs: 5 });
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test', streamDelayMs: 5 });
});
afterAll(async () => {
  await openai.close();
  await anthropic.close();
});

const providers = () => [
  {
    name: 'openai-chat',
    fake: openai as FakeOpenAi | FakeAnthropic,
    provider: createOpenAiChatProvider('oa', {
      api: 'openai-chat',
      baseUrl: openai.baseUrl,
      apiKey: 'sk-test',
    } as Parameters<typeof createOpenAiChatProvider>[1]),
  },
  {
    name: 'anthropic-messages',
    fake: anthropic as FakeOpenAi | FakeAnthropic,
    provider: createAnthropicMessagesProvider('an', {
      api: 'anthropic-messages',
      baseUrl: anthropic.url,
      apiKey: 'sk-ant-test',
      maxTokens: 1024,
    } as Parameters<typeof createAnthropicMessagesProvider>[1]),
  },
];

const ask = (onDelta?: (text: string) => void) => ({
  model: 'm',
  messages: [{ role: 'user' as const, content: 'hi' }],
  signal: new AbortController().signal,
  ...(onDelta ? { onDelta } : {}),
});

describe.each(['openai-chat', 'anthropic-messages'])('%s streamed', (name) => {
  const pick = () => providers().find((p) => p.name === name) as ReturnType<typeof providers>[number];

  it('asks for a stream, hands out each piece, returns them joined', async () => {
    const { fake, provider } = pick();
    fake.setReply(() => ({ stream: ['Hel', 'lo ', 'wor', 'ld'] }));
    const got: string[] = [];
    const result = await provider.complete(ask((t) => got.push(t)));
    expect(got).toEqual(['Hel', 'lo ', 'wor', 'ld']);
    expect(result.text).toBe('Hello world');
    expect(fake.requests.at(-1)?.body.stream).toBe(true);
    // Without onDelta: no stream asked, the same reply.
    const plain = await provider.complete(ask());
    expect(plain.text).toBe('Hello world');
    expect(fake.requests.at(-1)?.body.stream).toBeUndefined();
  });

  it('an error mid-stream fails the call, transient', async () => {
    const { fake, provider } = pick();
    fake.setReply(() => ({ stream: ['par', 'tial'], fail: { error: 'Overloaded' } }));
    const got: string[] = [];
    const error = await provider.complete(ask((t) => got.push(t))).catch((e) => e);
    expect(got).toEqual(['par', 'tial']);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.message).toContain('Overloaded');
    expect(error.transient).toBe(true);
  });

  it('a connection dropped mid-stream fails the call, transient', async () => {
    const { fake, provider } = pick();
    fake.setReply(() => ({ stream: ['par', 'tial'], fail: 'drop' }));
    const error = await provider.complete(ask(() => {})).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.transient).toBe(true);
  });

  it('a refusal before the stream is the usual status error, with the API message', async () => {
    const { fake, provider } = pick();
    fake.setReply(() => ({ status: 400, error: 'bad request here' }));
    const error = await provider.complete(ask(() => {})).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.status).toBe(400);
    expect(error.transient).toBe(false);
    expect(error.message).toContain('bad request here');
  });
});
