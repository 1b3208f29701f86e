/**
 * Prompt caching (docs/usage.md, "Prompt caching"), over real HTTP against the fakes:
 * `anthropic-messages` marks the system prompt, the newest earlier turn and, in a tool loop,
 * the latest results, and none with `promptCache: false`; the fake Anthropic checks
 * `cache_control` as the API does and caches the marked prefixes; `openai-chat` sends a
 * `prompt_cache_key` digested from the session key, none when off.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createProvider } from '../../../src/agents/providers/index.js';
import type { CompletionRequest, ConversationMessage } from '../../../src/agents/providers/types.js';
import { type FakeAnthropic, startFakeAnthropic } from '../../fakes/anthropic.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../fakes/openai.js';

const MARK = { cache_control: { type: 'ephemeral' } };
const SYSTEM = 'You are the release assistant. '.repeat(200);

function request(overrides: Partial<CompletionRequest> = {}): CompletionRequest {
  return {
    model: 'claude-sonnet-4-5',
    messages: [{ role: 'user', content: 'hello' }],
    signal: new AbortController().signal,
    ...overrides,
  };
}

const conversation: ConversationMessage[] = [
  { role: 'user', content: 'one' },
  { role: 'assistant', content: 'two' },
  { role: 'user', content: 'three' },
  { role: 'assistant', content: 'four' },
  { role: 'user', content: 'five' },
];

describe('anthropic-messages prompt caching', () => {
  let fake: FakeAnthropic;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ apiKey: 'sk-ant-test', streamDelayMs: 1, caching: true });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.clearCache();
    fake.setReply(() => 'ok');
  });

  const provider = (promptCache?: boolean) =>
    createProvider('anthropic', {
      api: 'anthropic-messages',
      baseUrl: fake.url,
      apiKey: 'sk-ant-test',
      maxTokens: 1024,
      ...(promptCache === undefined ? {} : { promptCache }),
    });

  it('marks the system prompt and the last block of the turn before the new user turn', async () => {
    await provider().complete(request({ system: 'Be terse.', messages: conversation }));
    const body = fake.requests[0]?.body;
    expect(body?.system).toEqual([{ type: 'text', text: 'Be terse.', ...MARK }]);
    expect(body?.messages).toEqual([
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three' },
      { role: 'assistant', content: [{ type: 'text', text: 'four', ...MARK }] },
      { role: 'user', content: 'five' },
    ]);
  });

  it("marks only the system prompt on a session's first turn", async () => {
    await provider().complete(request({ system: 'Be terse.' }));
    expect(fake.requests[0]?.body.messages).toEqual([{ role: 'user', content: 'hello' }]);
    expect(JSON.stringify(fake.requests[0]?.body).split('cache_control').length - 1).toBe(1);
  });

  it('in a tool loop also marks the latest results: three breakpoints, under the four allowed', async () => {
    const messages: ConversationMessage[] = [
      ...conversation,
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'repo.get', arguments: {} }] },
      { role: 'tool', callId: 'call_1', text: 'first', isError: false },
      { role: 'assistant', content: 'again', toolCalls: [{ id: 'call_2', name: 'repo.get', arguments: {} }] },
      { role: 'tool', callId: 'call_2', text: 'second', isError: false },
    ];
    const tools = [{ name: 'repo.get', description: 'Gets', inputSchema: { type: 'object' } }];
    await provider().complete(request({ system: 'Be terse.', messages, tools }));
    const sent = fake.requests[0]?.body.messages as { content: unknown }[];
    expect(sent[3]?.content).toEqual([{ type: 'text', text: 'four', ...MARK }]);
    expect(sent[4]?.content).toBe('five');
    expect(sent[6]?.content).toEqual([{ type: 'tool_result', tool_use_id: 'call_1', content: 'first' }]);
    expect(sent[8]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'call_2', content: 'second', ...MARK },
    ]);
    expect(JSON.stringify(fake.requests[0]?.body).split('cache_control').length - 1).toBe(3);
  });

  it('sends no breakpoint with promptCache false, the system prompt as a string', async () => {
    await provider(false).complete(request({ system: 'Be terse.', messages: conversation }));
    const body = fake.requests[0]?.body;
    expect(body?.system).toBe('Be terse.');
    expect(JSON.stringify(body)).not.toContain('cache_control');
  });

  for (const stream of [false, true]) {
    it(`a session's next turn reads its prefix from the fake's cache (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const call = (messages: ConversationMessage[]) =>
        provider().complete(request({ system: SYSTEM, messages, ...(stream ? { onDelta: () => {} } : {}) }));
      const first = await call([{ role: 'user', content: 'one' }]);
      // The system prompt (about 1,550 tokens, over the 1,024 minimum) is written, nothing read.
      expect(first.usage?.cacheWriteTokens).toBeGreaterThan(1024);
      expect(first.usage?.cacheReadTokens).toBe(0);
      const second = await call([
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'two' },
      ]);
      expect(second.usage?.cacheReadTokens).toBe(first.usage?.cacheWriteTokens);
      const third = await call([
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'two' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'three' },
      ]);
      // Read up to the second turn's breakpoint, the system prompt and the first exchange.
      expect(third.usage?.cacheReadTokens).toBe(
        (second.usage?.cacheReadTokens ?? 0) + (second.usage?.cacheWriteTokens ?? 0),
      );
      expect(third.usage?.cacheWriteTokens).toBeGreaterThan(0);
    });
  }

  it("a tool loop's next call reads the call before it, its results included", async () => {
    const tools = [{ name: 'repo.get', description: 'Gets', inputSchema: { type: 'object' } }];
    const loop: ConversationMessage[] = [
      { role: 'user', content: 'one' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'repo.get', arguments: {} }] },
      { role: 'tool', callId: 'call_1', text: 'result one '.repeat(50), isError: false },
    ];
    const first = await provider().complete(request({ system: SYSTEM, messages: loop, tools }));
    const next = await provider().complete(
      request({
        system: SYSTEM,
        tools,
        messages: [
          ...loop,
          { role: 'assistant', content: '', toolCalls: [{ id: 'call_2', name: 'repo.get', arguments: {} }] },
          { role: 'tool', callId: 'call_2', text: 'result two', isError: false },
        ],
      }),
    );
    expect(next.usage?.cacheReadTokens).toBe(
      (first.usage?.cacheReadTokens ?? 0) + (first.usage?.cacheWriteTokens ?? 0),
    );
  });

  it('without breakpoints nothing is cached: all input, every time', async () => {
    await provider(false).complete(request({ system: SYSTEM }));
    const again = await provider(false).complete(request({ system: SYSTEM }));
    expect(again.usage).toMatchObject({ cacheReadTokens: 0, cacheWriteTokens: 0 });
    expect(again.usage?.inputTokens).toBeGreaterThan(1024);
  });

  it('a prefix under the 1,024-token minimum is not cached', async () => {
    await provider().complete(request({ system: 'Be terse.' }));
    const again = await provider().complete(request({ system: 'Be terse.' }));
    expect(again.usage).toMatchObject({ cacheReadTokens: 0, cacheWriteTokens: 0 });
  });
});

describe("the fake Anthropic's cache_control checks, as the API's", () => {
  let fake: FakeAnthropic;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ apiKey: 'sk-ant-test' });
  });
  afterAll(() => fake.close());

  const post = async (body: Record<string, unknown>) => {
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'sk-ant-test',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, ...body }),
    });
    return { status: res.status, json: (await res.json()) as { error?: { message?: string } } };
  };
  const text = (t: string, marked = true) => ({ type: 'text', text: t, ...(marked ? MARK : {}) });

  it('takes four breakpoints, refuses five', async () => {
    const turns = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: [text(`t${i}`)] }));
    expect((await post({ messages: turns(3), system: [text('s')] })).status).toBe(200);
    const five = await post({ messages: turns(5), system: [text('s', false)] });
    expect(five.status).toBe(400);
    expect(five.json.error?.message).toBe(
      'A maximum of 4 blocks with cache_control may be provided. Found 5.',
    );
  });

  it('refuses cache_control on a thinking block, an empty text block, a message, or of another type', async () => {
    const thinking = await post({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 'x', ...MARK }] },
        { role: 'user', content: 'go' },
      ],
    });
    expect(thinking.json.error?.message).toBe(
      'messages.1.content.0.thinking.cache_control: Extra inputs are not permitted',
    );
    const empty = await post({
      messages: [{ role: 'user', content: [{ type: 'text', text: '', ...MARK }] }],
    });
    expect(empty.status).toBe(400);
    const onMessage = await post({ messages: [{ role: 'user', content: 'hi', ...MARK }] });
    expect(onMessage.json.error?.message).toBe('messages.0.cache_control: Extra inputs are not permitted');
    const other = await post({
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'persistent' } }] },
      ],
    });
    expect(other.status).toBe(400);
    expect(other.json.error?.message).toMatch(/^messages\.0\.content\.0\.cache_control\.type/);
    const system = await post({
      system: [{ type: 'image', ...MARK }],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(system.json.error?.message).toBe("system.0.type: Input should be 'text'");
  });
});

describe('openai-chat prompt_cache_key', () => {
  let fake: FakeOpenAi;
  beforeAll(async () => {
    fake = await startFakeOpenAi({ apiKey: 'sk-test' });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
  });

  const provider = (promptCache?: boolean) =>
    createProvider('openai', {
      api: 'openai-chat',
      baseUrl: fake.baseUrl,
      apiKey: 'sk-test',
      ...(promptCache === undefined ? {} : { promptCache }),
    });
  const call = (sessionKey: string | undefined, promptCache?: boolean) =>
    provider(promptCache).complete(
      request({ model: 'gpt-5-mini', ...(sessionKey === undefined ? {} : { sessionKey }) }),
    );
  const keyOf = (i: number) => fake.requests[i]?.body.prompt_cache_key;

  it("is a digest of the session key: the same for one session's turns, another for another session", async () => {
    const session = 'hook:telegram:+15551234567';
    await call(session);
    await call(session);
    await call('hook:telegram:+15557654321');
    expect(keyOf(0)).toMatch(/^[0-9a-f]{32}$/);
    expect(keyOf(1)).toBe(keyOf(0));
    expect(keyOf(2)).not.toBe(keyOf(0));
    // Never the key itself, nor any piece of it.
    expect(JSON.stringify(fake.requests.map((r) => r.body))).not.toContain('5551234567');
  });

  it('is absent with promptCache false, and for a call of no session', async () => {
    await call('hook:s1', false);
    await call(undefined);
    expect(fake.requests[0]?.body).not.toHaveProperty('prompt_cache_key');
    expect(fake.requests[1]?.body).not.toHaveProperty('prompt_cache_key');
  });
});
