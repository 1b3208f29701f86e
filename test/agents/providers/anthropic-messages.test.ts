import { afterEach, describe, expect, it } from 'vitest';
import { THINKING_BUDGET_TOKENS } from '../../../src/agents/providers/anthropic-messages/client.js';
import { createProvider } from '../../../src/agents/providers/index.js';
import { type CompletionRequest, ProviderError } from '../../../src/agents/providers/types.js';
import { type FakeAnthropic, startFakeAnthropic } from '../../fakes/anthropic.js';
import { waitFor } from '../../helpers/wait.js';

/** What the fakes report when a reply names no usage: 10 tokens in, 5 out. */
const FAKE_DEFAULT_USAGE = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };

const KEY = 'sk-ant-test-0123456789abcdef';
let fake: FakeAnthropic | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function provider(
  baseUrl: string,
  extra: { apiKey?: string; maxTokens?: number; headers?: Record<string, string> } = {},
) {
  return createProvider('anthropic', {
    api: 'anthropic-messages',
    baseUrl,
    maxTokens: extra.maxTokens ?? 4096,
    apiKey: extra.apiKey ?? KEY,
    ...(extra.headers ? { headers: extra.headers } : {}),
  });
}

function request(overrides: Partial<CompletionRequest> = {}): CompletionRequest {
  return {
    model: 'claude-sonnet-4-5',
    messages: [{ role: 'user', content: 'hello' }],
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

describe('anthropic-messages provider', () => {
  it('sends the Messages API request with its headers and returns the reply', async () => {
    fake = await startFakeAnthropic({ apiKey: KEY, reply: () => 'Hi there' });
    const result = await provider(fake.url).complete(request());
    expect(result).toEqual({ text: 'Hi there', usage: FAKE_DEFAULT_USAGE });
    const [sent] = fake.requests;
    expect(sent?.method).toBe('POST');
    expect(sent?.path).toBe('/v1/messages');
    expect(sent?.headers['x-api-key']).toBe(KEY);
    expect(sent?.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 4096,
      messages: [{ role: 'user', content: 'hello' }],
    });
  });

  it('sends the system prompt as the top-level system field and keeps every turn', async () => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    await provider(fake.url, { maxTokens: 1000 }).complete(
      request({
        system: 'You are terse.',
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'three' },
        ],
      }),
    );
    expect(fake.requests[0]?.body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 1000,
      // Prompt caching marks the system prompt and the newest earlier turn (docs/usage.md).
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: [{ type: 'text', text: 'two', cache_control: { type: 'ephemeral' } }] },
        { role: 'user', content: 'three' },
      ],
    });
  });

  it('makes a history the API would refuse valid: drops a leading assistant turn, merges repeated roles', async () => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    await provider(fake.url).complete(
      request({
        messages: [
          { role: 'assistant', content: 'orphaned answer' },
          { role: 'user', content: 'first try' },
          { role: 'user', content: 'second try' },
        ],
      }),
    );
    expect(fake.requests[0]?.body.messages).toEqual([{ role: 'user', content: 'first try\n\nsecond try' }]);
  });

  it('adds the configured extra headers', async () => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    await provider(fake.url, { headers: { 'anthropic-beta': 'some-feature' } }).complete(request());
    expect(fake.requests[0]?.headers['anthropic-beta']).toBe('some-feature');
  });

  it.each([
    ['minimal', 1024],
    ['low', 2048],
    ['medium', 8192],
    ['high', 24576],
  ] as const)('maps thinking %s to a %i-token budget with max_tokens above it', async (thinking, budget) => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    await provider(fake.url, { maxTokens: 4096 }).complete(request({ thinking }));
    const body = fake.requests[0]?.body;
    expect(THINKING_BUDGET_TOKENS[thinking]).toBe(budget);
    expect(body?.thinking).toEqual({ type: 'enabled', budget_tokens: budget });
    expect(body?.max_tokens).toBe(budget < 4096 ? 4096 : budget + 4096);
  });

  it('keeps a configured max_tokens that is already above the budget', async () => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    await provider(fake.url, { maxTokens: 32_000 }).complete(request({ thinking: 'high' }));
    expect(fake.requests[0]?.body.max_tokens).toBe(32_000);
  });

  it.each([['off'], [null], [undefined]] as const)('omits thinking for %s', async (thinking) => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    await provider(fake.url).complete(request({ thinking }));
    expect(fake.requests[0]?.body).not.toHaveProperty('thinking');
  });

  it('returns only the text blocks, in order, skipping thinking blocks', async () => {
    fake = await startFakeAnthropic({
      apiKey: KEY,
      reply: () => ({
        json: {
          type: 'message',
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'let me think', signature: 'x' },
            { type: 'text', text: 'The answer ' },
            { type: 'text', text: 'is 42.' },
          ],
          stop_reason: 'end_turn',
        },
      }),
    });
    expect((await provider(fake.url).complete(request({ thinking: 'low' }))).text).toBe('The answer is 42.');
  });

  it.each([
    ['without', ''],
    ['with', '/'],
  ])('accepts a base URL %s a trailing slash', async (_label, slash) => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    await provider(`${fake.url}${slash}`).complete(request());
    expect(fake.requests[0]?.path).toBe('/v1/messages');
  });

  it('maps 401 to the API message, never the key', async () => {
    fake = await startFakeAnthropic({ apiKey: 'sk-ant-the-right-one' });
    const error = await failure(provider(fake.url).complete(request()));
    expect(error.status).toBe(401);
    expect(error.message).toBe('anthropic-messages provider "anthropic": 401 invalid x-api-key');
    expect(error.message).not.toContain(KEY);
  });

  it('redacts the key even when the API echoes it verbatim', async () => {
    fake = await startFakeAnthropic({ reply: () => ({ status: 403, error: `key ${KEY} lacks access` }) });
    const error = await failure(provider(fake.url).complete(request()));
    expect(error.message).toBe('anthropic-messages provider "anthropic": 403 key [redacted] lacks access');
  });

  it.each([
    [500, 'Internal server error'],
    [529, 'Overloaded'],
  ])('maps %i with the API error message', async (status, message) => {
    fake = await startFakeAnthropic({ reply: () => ({ status, error: message }) });
    const error = await failure(provider(fake.url).complete(request()));
    expect(error.status).toBe(status);
    expect(error.message).toBe(`anthropic-messages provider "anthropic": ${status} ${message}`);
  });

  it('reports a 200 reply that is not JSON', async () => {
    fake = await startFakeAnthropic({ reply: () => ({ raw: 'not json at all' }) });
    const error = await failure(provider(fake.url).complete(request()));
    expect(error.message).toBe(
      'anthropic-messages provider "anthropic": returned a reply that is not JSON: not json at all',
    );
  });

  it('reports a reply without text, with its stop reason', async () => {
    fake = await startFakeAnthropic({
      reply: () => ({ json: { type: 'message', content: [], stop_reason: 'max_tokens' } }),
    });
    const error = await failure(provider(fake.url).complete(request()));
    expect(error.message).toBe(
      'anthropic-messages provider "anthropic": returned no text (stop_reason max_tokens)',
    );
  });

  it('reports a reply without content', async () => {
    fake = await startFakeAnthropic({ reply: () => ({ json: { type: 'message' } }) });
    const error = await failure(provider(fake.url).complete(request()));
    expect(error.message).toBe('anthropic-messages provider "anthropic": returned no content');
  });

  it('says it could not reach the host when nothing listens', async () => {
    fake = await startFakeAnthropic();
    const { url } = fake;
    await fake.close();
    fake = undefined;
    const error = await failure(provider(url).complete(request()));
    expect(error.message).toBe(
      `anthropic-messages provider "anthropic": could not reach ${new URL(url).host} (ECONNREFUSED)`,
    );
  });

  it('aborts a slow request promptly with the caller reason and closes the connection', async () => {
    fake = await startFakeAnthropic({ apiKey: KEY, delayMs: 20_000 });
    const controller = new AbortController();
    const reason = new Error('run timed out');
    const pending = provider(fake.url).complete(request({ signal: controller.signal }));
    const aborted = fake.nextAbort();
    await waitFor(() => fake?.requests.length === 1, 'the request at the fake', 5000);
    const started = Date.now();
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await aborted).aborted).toBe(true);
  });
});
