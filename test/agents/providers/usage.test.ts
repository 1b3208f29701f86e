/**
 * Token usage read from each HTTP provider's answers (docs/usage.md), over real HTTP against
 * the loopback fakes: OpenAI's `prompt_tokens` (cached included) and `cached_tokens`, the
 * streamed call asking `stream_options.include_usage` and reading the last chunk; Anthropic's
 * `input_tokens` (cached excluded) plus its two cache fields, streamed from `message_start`
 * and `message_delta`. Plain replies and tool calls alike.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropicMessagesProvider } from '../../../src/agents/providers/anthropic-messages/client.js';
import { costOf } from '../../../src/agents/providers/kit/prices.js';
import { createOpenAiChatProvider } from '../../../src/agents/providers/openai-chat/client.js';
import { type FakeAnthropic, startFakeAnthropic } from '../../fakes/anthropic.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../fakes/openai.js';

let openai: FakeOpenAi;
let anthropic: FakeAnthropic;
beforeAll(async () => {
  openai = await startFakeOpenAi({ apiKey: 'sk-test', streamDelayMs: 1 });
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test', streamDelayMs: 1 });
});
afterAll(async () => {
  await openai.close();
  await anthropic.close();
});

const oai = () =>
  createOpenAiChatProvider('oai', {
    api: 'openai-chat',
    baseUrl: openai.baseUrl,
    apiKey: 'sk-test',
  } as Parameters<typeof createOpenAiChatProvider>[1]);
const claude = () =>
  createAnthropicMessagesProvider('claude', {
    api: 'anthropic-messages',
    baseUrl: anthropic.url,
    apiKey: 'sk-ant-test',
    maxTokens: 1024,
  } as Parameters<typeof createAnthropicMessagesProvider>[1]);

const tool = { name: 'repo.get', description: 'get', inputSchema: { type: 'object' as const } };
const ask = (streamed: boolean, withTools = false) => ({
  model: 'm',
  messages: [{ role: 'user' as const, content: 'hi' }],
  signal: new AbortController().signal,
  ...(streamed ? { onDelta: () => {} } : {}),
  ...(withTools ? { tools: [tool] } : {}),
});

describe.each([false, true])('openai-chat usage (streamed: %s)', (streamed) => {
  it('reads prompt, completion and cached tokens of a reply', async () => {
    openai.setReply(() => ({ usage: { prompt: 1200, completion: 80, cached: 1024 }, reply: 'Hello there' }));
    const result = await oai().complete(ask(streamed));
    expect(result.text).toBe('Hello there');
    expect(result.usage).toEqual({
      inputTokens: 1200,
      outputTokens: 80,
      cacheReadTokens: 1024,
      cacheWriteTokens: 0,
    });
  });

  it('reads the usage of a reply asking for tool calls', async () => {
    openai.setReply(() => ({
      usage: { prompt: 300, completion: 40 },
      reply: { toolCalls: [{ name: 'repo__get', arguments: {} }] },
    }));
    const result = await oai().complete(ask(streamed, true));
    expect(result.calls).toHaveLength(1);
    expect(result.usage).toEqual({
      inputTokens: 300,
      outputTokens: 40,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
  });
});

it('openai-chat: a streamed call asks for its usage', async () => {
  openai.setReply(() => 'hi');
  await oai().complete(ask(true));
  expect(openai.requests.at(-1)?.body.stream_options).toEqual({ include_usage: true });
});

it('openai-chat: an answer without usage has none', async () => {
  openai.setReply(() => ({
    json: { choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] },
  }));
  const result = await oai().complete(ask(false));
  expect(result.text).toBe('hi');
  expect(result.usage).toBeUndefined();
});

describe.each([false, true])('anthropic-messages usage (streamed: %s)', (streamed) => {
  it('adds the cached tokens to input_tokens, and reads both cache fields', async () => {
    anthropic.setReply(() => ({
      usage: { input: 50, output: 120, cacheRead: 2000, cacheWrite: 300 },
      reply: 'Hello there',
    }));
    const result = await claude().complete(ask(streamed));
    expect(result.text).toBe('Hello there');
    expect(result.usage).toEqual({
      inputTokens: 2350,
      outputTokens: 120,
      cacheReadTokens: 2000,
      cacheWriteTokens: 300,
    });
  });

  it('reads the usage of a reply asking for tool calls', async () => {
    anthropic.setReply(() => ({
      usage: { input: 70, output: 33 },
      reply: { toolUses: [{ name: 'repo__get', input: {} }] },
    }));
    const result = await claude().complete(ask(streamed, true));
    expect(result.calls).toHaveLength(1);
    expect(result.usage).toEqual({
      inputTokens: 70,
      outputTokens: 33,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
  });
});

describe('costOf', () => {
  const usage = {
    inputTokens: 2_350_000,
    outputTokens: 120_000,
    cacheReadTokens: 2_000_000,
    cacheWriteTokens: 300_000,
  };

  it('prices uncached input, cache reads, cache writes and output per million', () => {
    const cost = costOf(usage, { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 });
    // 50k × 3 + 2M × 0.3 + 300k × 3.75 + 120k × 15, per million
    expect(cost).toBeCloseTo(0.15 + 0.6 + 1.125 + 1.8, 10);
  });

  it('prices a missing cache price at input', () => {
    const cost = costOf(usage, { input: 3, output: 15 });
    expect(cost).toBeCloseTo(2.35 * 3 + 0.12 * 15, 10);
  });
});
