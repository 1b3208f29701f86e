/**
 * Tool calling on the wire (docs/agent-runs.md, "Tools"), over real HTTP to the loopback
 * fakes of both APIs, streamed and not: the tools offered under encoded names, the calls
 * read back with the tools' own names, malformed arguments kept as such, the calls and
 * their results sent back in each API's own turns, and only text handed to `onDelta`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createProvider } from '../../../src/agents/providers/index.js';
import type {
  CompletionRequest,
  ConversationMessage,
  ModelProvider,
} from '../../../src/agents/providers/types.js';
import type { ToolSpec } from '../../../src/tools/types.js';
import { type FakeAnthropic, fakeSignature, startFakeAnthropic } from '../../fakes/anthropic.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../fakes/openai.js';

/** What the fakes report when a reply names no usage: 10 tokens in, 5 out. */
const FAKE_DEFAULT_USAGE = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };

const TOOLS: ToolSpec[] = [
  {
    name: 'repo.get_pull_request',
    description: 'Reads a pull request',
    inputSchema: { type: 'object', properties: { number: { type: 'integer' } }, required: ['number'] },
  },
  { name: 'tickets.create_ticket', description: 'Files a ticket', inputSchema: { type: 'object' } },
];

/** A conversation after one round of the loop: the call and its (already wrapped) result. */
const AFTER_ONE_CALL: ConversationMessage[] = [
  { role: 'user', content: 'review PR 7' },
  {
    role: 'assistant',
    content: 'Reading it.',
    toolCalls: [{ id: 'call_1', name: 'repo.get_pull_request', arguments: { number: 7 } }],
  },
  { role: 'tool', callId: 'call_1', text: 'PR 7 (wrapped)', isError: false },
];

const modes = [
  { name: 'not streamed', stream: false },
  { name: 'streamed', stream: true },
] as const;

function request(
  model: string,
  stream: boolean,
  overrides: Partial<CompletionRequest> = {},
): CompletionRequest & { deltas: string[] } {
  const deltas: string[] = [];
  return {
    model,
    messages: [{ role: 'user', content: 'review PR 7' }],
    signal: new AbortController().signal,
    tools: TOOLS,
    ...(stream ? { onDelta: (text: string) => deltas.push(text) } : {}),
    ...overrides,
    deltas,
  };
}

describe('openai-chat tool calling', () => {
  let fake: FakeOpenAi;
  let provider: ModelProvider;
  beforeAll(async () => {
    fake = await startFakeOpenAi({ apiKey: 'sk-test', streamDelayMs: 1 });
    provider = createProvider('openai', { api: 'openai-chat', baseUrl: fake.baseUrl, apiKey: 'sk-test' });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
  });

  for (const { name, stream } of modes) {
    describe(name, () => {
      it('offers the tools as functions under encoded names and decodes the calls', async () => {
        fake.script([
          {
            text: 'Let me look.',
            toolCalls: [
              { id: 'call_a', name: 'repo__get_pull_request', arguments: { number: 7 } },
              { id: 'call_b', name: 'tickets__create_ticket', arguments: '{"title":"parser bug"}' },
            ],
          },
        ]);
        const req = request('gpt-4o-mini', stream);
        const result = await provider.complete(req);

        expect(fake.requests[0]?.body.tools).toEqual([
          {
            type: 'function',
            function: {
              name: 'repo__get_pull_request',
              description: 'Reads a pull request',
              parameters: TOOLS[0]?.inputSchema,
            },
          },
          {
            type: 'function',
            function: {
              name: 'tickets__create_ticket',
              description: 'Files a ticket',
              parameters: { type: 'object' },
            },
          },
        ]);
        expect(result.text).toBe('Let me look.');
        expect(result.calls).toEqual([
          { id: 'call_a', name: 'repo.get_pull_request', arguments: { number: 7 } },
          { id: 'call_b', name: 'tickets.create_ticket', arguments: { title: 'parser bug' } },
        ]);
        if (stream) expect(req.deltas.join('')).toBe('Let me look.');
      });

      it('keeps malformed arguments as such instead of failing the call', async () => {
        fake.script([
          { toolCalls: [{ id: 'call_x', name: 'repo__get_pull_request', arguments: '{"number": 7' }] },
        ]);
        const result = await provider.complete(request('gpt-4o-mini', stream));
        expect(result.text).toBe('');
        expect(result.calls).toHaveLength(1);
        expect(result.calls?.[0]).toMatchObject({
          id: 'call_x',
          name: 'repo.get_pull_request',
          arguments: {},
        });
        expect(result.calls?.[0]?.invalidArguments).toMatch(/^the arguments are not valid JSON/);
      });

      it('sends the call and its result back as an assistant tool_calls turn and a tool message', async () => {
        fake.script(['Reviewed.']);
        const result = await provider.complete(request('gpt-4o-mini', stream, { messages: AFTER_ONE_CALL }));
        expect(result).toEqual({ text: 'Reviewed.', usage: FAKE_DEFAULT_USAGE });
        expect(fake.requests[0]?.body.messages).toEqual([
          { role: 'user', content: 'review PR 7' },
          {
            role: 'assistant',
            content: 'Reading it.',
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'repo__get_pull_request', arguments: '{"number":7}' },
              },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'PR 7 (wrapped)' },
        ]);
      });
    });
  }

  it('sends a call-only turn with content null, and says an error result failed', async () => {
    fake.script(['ok']);
    const messages: ConversationMessage[] = [
      { role: 'user', content: 'file it' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c1', name: 'tickets.create_ticket', arguments: {} }],
      },
      { role: 'tool', callId: 'c1', text: 'server died', isError: true },
    ];
    await provider.complete(request('gpt-4o-mini', false, { messages }));
    const sent = fake.requests[0]?.body.messages ?? [];
    expect(sent[1]).toMatchObject({ role: 'assistant', content: null });
    expect(sent[2]).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: 'The tool call failed.\nserver died',
    });
  });

  it('sends no tools field without tools', async () => {
    fake.script(['plain']);
    await provider.complete(request('gpt-4o-mini', false, { tools: [] }));
    expect(Object.keys(fake.requests[0]?.body ?? {})).toEqual(['model', 'messages']);
  });
});

describe('anthropic-messages tool use', () => {
  let fake: FakeAnthropic;
  let provider: ModelProvider;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ apiKey: 'sk-ant-test', streamDelayMs: 1 });
    provider = createProvider('anthropic', {
      api: 'anthropic-messages',
      baseUrl: fake.url,
      apiKey: 'sk-ant-test',
      maxTokens: 1024,
    });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
  });

  for (const { name, stream } of modes) {
    describe(name, () => {
      it('offers the tools with input_schema under encoded names and decodes tool_use blocks', async () => {
        fake.script([
          {
            text: 'Let me look.',
            toolUses: [
              { id: 'toolu_a', name: 'repo__get_pull_request', input: { number: 7 } },
              { id: 'toolu_b', name: 'tickets__create_ticket', input: { title: 'parser bug' } },
            ],
          },
        ]);
        const req = request('claude-sonnet-4-5', stream);
        const result = await provider.complete(req);

        expect(fake.requests[0]?.body.tools).toEqual([
          {
            name: 'repo__get_pull_request',
            description: 'Reads a pull request',
            input_schema: TOOLS[0]?.inputSchema,
          },
          { name: 'tickets__create_ticket', description: 'Files a ticket', input_schema: { type: 'object' } },
        ]);
        expect(result.text).toBe('Let me look.');
        expect(result.calls).toEqual([
          { id: 'toolu_a', name: 'repo.get_pull_request', arguments: { number: 7 } },
          { id: 'toolu_b', name: 'tickets.create_ticket', arguments: { title: 'parser bug' } },
        ]);
        if (stream) expect(req.deltas.join('')).toBe('Let me look.');
      });

      it('sends the call as a tool_use block and its result as a tool_result block of the next user turn', async () => {
        fake.script(['Reviewed.']);
        // Two calls of one turn, one failed: both results in one user turn, the error flagged.
        const messages: ConversationMessage[] = [
          { role: 'user', content: 'review PR 7' },
          {
            role: 'assistant',
            content: 'Reading it.',
            toolCalls: [
              { id: 'call_1', name: 'repo.get_pull_request', arguments: { number: 7 } },
              { id: 'call_2', name: 'tickets.create_ticket', arguments: {} },
            ],
          },
          { role: 'tool', callId: 'call_1', text: 'PR 7 (wrapped)', isError: false },
          { role: 'tool', callId: 'call_2', text: 'server died', isError: true },
        ];
        const result = await provider.complete(request('claude-sonnet-4-5', stream, { messages }));
        expect(result).toEqual({ text: 'Reviewed.', usage: FAKE_DEFAULT_USAGE });
        expect(fake.requests[0]?.body.messages).toEqual([
          { role: 'user', content: 'review PR 7' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Reading it.' },
              { type: 'tool_use', id: 'call_1', name: 'repo__get_pull_request', input: { number: 7 } },
              { type: 'tool_use', id: 'call_2', name: 'tickets__create_ticket', input: {} },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'call_1', content: 'PR 7 (wrapped)' },
              // The latest results are a breakpoint (docs/usage.md, "Prompt caching").
              {
                type: 'tool_result',
                tool_use_id: 'call_2',
                content: 'server died',
                is_error: true,
                cache_control: { type: 'ephemeral' },
              },
            ],
          },
        ]);
      });
    });
  }

  it('keeps malformed streamed input as such instead of failing the call', async () => {
    fake.script([
      { toolUses: [{ id: 'toolu_x', name: 'repo__get_pull_request', inputJson: '{"number": ' }] },
    ]);
    const result = await provider.complete(request('claude-sonnet-4-5', true));
    expect(result.calls?.[0]).toMatchObject({ id: 'toolu_x', name: 'repo.get_pull_request', arguments: {} });
    expect(result.calls?.[0]?.invalidArguments).toMatch(/^the arguments are not valid JSON/);
  });

  it('sends a call-only assistant turn without an empty text block', async () => {
    fake.script(['ok']);
    const messages: ConversationMessage[] = [
      { role: 'user', content: 'file it' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c1', name: 'tickets.create_ticket', arguments: {} }],
      },
      { role: 'tool', callId: 'c1', text: 'TICKET-1', isError: false },
    ];
    await provider.complete(request('claude-sonnet-4-5', false, { messages }));
    expect(fake.requests[0]?.body.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'c1', name: 'tickets__create_ticket', input: {} }],
    });
  });

  it('sends no tools field without tools', async () => {
    fake.script(['plain']);
    await provider.complete(request('claude-sonnet-4-5', false, { tools: undefined }));
    expect(Object.keys(fake.requests[0]?.body ?? {})).toEqual(['model', 'max_tokens', 'messages']);
  });
});

describe('anthropic-messages extended thinking with tool use', () => {
  let fake: FakeAnthropic;
  let provider: ModelProvider;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ apiKey: 'sk-ant-test', streamDelayMs: 1 });
    provider = createProvider('anthropic', {
      api: 'anthropic-messages',
      baseUrl: fake.url,
      apiKey: 'sk-ant-test',
      maxTokens: 4096,
    });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
  });

  for (const { name, stream } of modes) {
    it(`sends the signed thinking block back first in the turn that called tools (${name})`, async () => {
      fake.script([
        {
          thinking: 'I need the PR.',
          toolUses: [{ id: 'toolu_1', name: 'repo__get_pull_request', input: { number: 7 } }],
        },
        'Reviewed.',
      ]);
      const first = await provider.complete(request('claude-sonnet-4-5', stream, { thinking: 'low' }));
      expect(first.providerBlocks).toEqual([
        { type: 'thinking', thinking: 'I need the PR.', signature: fakeSignature('I need the PR.') },
      ]);
      const messages: ConversationMessage[] = [
        { role: 'user', content: 'review PR 7' },
        {
          role: 'assistant',
          content: first.text,
          toolCalls: first.calls ?? [],
          ...(first.providerBlocks ? { providerBlocks: first.providerBlocks } : {}),
        },
        { role: 'tool', callId: 'toolu_1', text: 'PR 7', isError: false },
      ];
      const second = await provider.complete(
        request('claude-sonnet-4-5', stream, { thinking: 'low', messages }),
      );
      expect(second.text).toBe('Reviewed.');
      const body = fake.requests[1]?.body;
      expect(body?.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
      expect(((body?.messages[1]?.content ?? []) as { type: string }[]).map((b) => b.type)).toEqual([
        'thinking',
        'tool_use',
      ]);
    });
  }

  it('without the thinking block (a resumed run), calls without thinking rather than be refused', async () => {
    fake.script(['Reviewed.']);
    const result = await provider.complete(
      request('claude-sonnet-4-5', false, { thinking: 'low', messages: AFTER_ONE_CALL }),
    );
    expect(result.text).toBe('Reviewed.');
    expect(fake.requests[0]?.body).not.toHaveProperty('thinking');
  });
});

describe('the fakes check the turns of a tool loop as the APIs do', () => {
  const unanswered: ConversationMessage[] = [
    ...AFTER_ONE_CALL.slice(0, 2),
    { role: 'user', content: 'and now?' },
  ];

  it('openai: a tool call without its tool message is refused', async () => {
    const fake = await startFakeOpenAi();
    try {
      const provider = createProvider('openai', { api: 'openai-chat', baseUrl: fake.baseUrl });
      await expect(
        provider.complete(request('gpt-4o-mini', false, { messages: unanswered })),
      ).rejects.toThrow(/must be followed by tool messages responding to each 'tool_call_id'.*call_1/);
    } finally {
      await fake.close();
    }
  });

  it('anthropic: a tool_use without its tool_result is refused', async () => {
    const fake = await startFakeAnthropic();
    try {
      const provider = createProvider('anthropic', {
        api: 'anthropic-messages',
        baseUrl: fake.url,
        maxTokens: 1024,
      });
      await expect(
        provider.complete(request('claude-sonnet-4-5', false, { messages: unanswered })),
      ).rejects.toThrow(/`tool_use` ids were found without `tool_result` blocks immediately after: call_1/);
    } finally {
      await fake.close();
    }
  });
});
