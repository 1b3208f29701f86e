import { afterEach, describe, expect, it } from 'vitest';
import { createProvider } from '../../../src/agents/providers/index.js';
import { type CompletionRequest, ProviderError } from '../../../src/agents/providers/types.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../fakes/openai.js';
import { waitFor } from '../../helpers/wait.js';

/** What the fakes report when a reply names no usage: 10 tokens in, 5 out. */
const FAKE_DEFAULT_USAGE = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };

const KEY = 'sk-test-0123456789abcdef';
let fake: FakeOpenAi | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function provider(baseUrl: string, extra: { apiKey?: string; headers?: Record<string, string> } = {}) {
  return createProvider('openai', { api: 'openai-chat', baseUrl, ...extra });
}

function request(overrides: Partial<CompletionRequest> = {}): CompletionRequest {
  return {
    model: 'gpt-4o-mini',
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

describe('openai-chat provider', () => {
  it('sends the model and messages with the bearer key and returns the reply', async () => {
    fake = await startFakeOpenAi({ apiKey: KEY, reply: () => 'Hi there' });
    const result = await provider(fake.baseUrl, { apiKey: KEY }).complete(request());
    expect(result).toEqual({ text: 'Hi there', usage: FAKE_DEFAULT_USAGE });
    expect(fake.requests).toHaveLength(1);
    const [sent] = fake.requests;
    expect(sent?.method).toBe('POST');
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(sent?.body).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });
  });

  it('puts the system prompt first and keeps every turn in order', async () => {
    fake = await startFakeOpenAi();
    await provider(fake.baseUrl).complete(
      request({
        system: 'You are terse.',
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'three' },
        ],
      }),
    );
    expect(fake.requests[0]?.body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three' },
    ]);
  });

  it('sends no Authorization header when no key is configured (local servers)', async () => {
    fake = await startFakeOpenAi();
    await provider(fake.baseUrl).complete(request());
    expect(fake.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('adds the configured extra headers', async () => {
    fake = await startFakeOpenAi({ apiKey: KEY });
    await provider(fake.baseUrl, {
      apiKey: KEY,
      headers: { 'HTTP-Referer': 'https://example.com' },
    }).complete(request());
    expect(fake.requests[0]?.headers['http-referer']).toBe('https://example.com');
  });

  it.each([
    ['minimal', 'minimal'],
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
  ] as const)('maps thinking %s to reasoning_effort %s', async (thinking, effort) => {
    fake = await startFakeOpenAi();
    await provider(fake.baseUrl).complete(request({ model: 'o4-mini', thinking }));
    expect(fake.requests[0]?.body.reasoning_effort).toBe(effort);
  });

  it.each([['off'], [null], [undefined]] as const)(
    'omits reasoning_effort for thinking %s',
    async (thinking) => {
      fake = await startFakeOpenAi();
      await provider(fake.baseUrl).complete(request({ thinking }));
      expect(fake.requests[0]?.body).not.toHaveProperty('reasoning_effort');
    },
  );

  it.each([
    ['without', ''],
    ['with', '/'],
    ['with two', '//'],
  ])('accepts a base URL %s a trailing slash', async (_label, slash) => {
    fake = await startFakeOpenAi();
    await provider(`${fake.baseUrl}${slash}`).complete(request());
    expect(fake.requests[0]?.path).toBe('/v1/chat/completions');
  });

  it('works under a base URL with another prefix (e.g. OpenRouter /api/v1)', async () => {
    fake = await startFakeOpenAi({ pathPrefix: '/api/v1' });
    const result = await provider(fake.baseUrl).complete(request());
    expect(result.text).toBe('Fake reply to: hello');
    expect(fake.requests[0]?.path).toBe('/api/v1/chat/completions');
  });

  it('joins the text parts when content is an array', async () => {
    fake = await startFakeOpenAi({
      reply: () => ({
        json: {
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: [
                  { type: 'text', text: 'Hello, ' },
                  { type: 'image_url', image_url: { url: 'x' } },
                  { type: 'text', text: 'world' },
                ],
              },
              finish_reason: 'stop',
            },
          ],
        },
      }),
    });
    expect((await provider(fake.baseUrl).complete(request())).text).toBe('Hello, world');
  });

  it('maps 401 to the API message, never the key', async () => {
    fake = await startFakeOpenAi({ apiKey: 'sk-the-right-one' });
    const error = await failure(provider(fake.baseUrl, { apiKey: KEY }).complete(request()));
    expect(error.status).toBe(401);
    expect(error.message).toMatch(/^openai-chat provider "openai": 401 Incorrect API key provided/);
    expect(error.message).not.toContain(KEY);
  });

  it('redacts the key even when the API echoes it verbatim', async () => {
    fake = await startFakeOpenAi({ reply: () => ({ status: 403, error: `key ${KEY} is disabled` }) });
    const error = await failure(provider(fake.baseUrl, { apiKey: KEY }).complete(request()));
    expect(error.message).toBe('openai-chat provider "openai": 403 key [redacted] is disabled');
  });

  it('maps 500 with the API error message', async () => {
    fake = await startFakeOpenAi({
      reply: () => ({
        status: 500,
        error: 'The server had an error while processing your request.',
        type: 'server_error',
      }),
    });
    const error = await failure(provider(fake.baseUrl).complete(request()));
    expect(error.status).toBe(500);
    expect(error.message).toBe(
      'openai-chat provider "openai": 500 The server had an error while processing your request.',
    );
  });

  it('marks 429 and 5xx transient with the Retry-After wait, and a refusal not', async () => {
    fake = await startFakeOpenAi({
      reply: () => ({ status: 429, error: 'Rate limit reached', type: 'requests', retryAfter: '20' }),
    });
    const limited = await failure(provider(fake.baseUrl).complete(request()));
    expect(limited).toMatchObject({ status: 429, transient: true, retryAfterMs: 20_000 });
    await fake.close();
    fake = await startFakeOpenAi({ reply: () => ({ status: 503, error: 'overloaded' }) });
    expect(await failure(provider(fake.baseUrl).complete(request()))).toMatchObject({ transient: true });
    await fake.close();
    fake = await startFakeOpenAi({ reply: () => ({ status: 400, error: 'bad request' }) });
    expect(await failure(provider(fake.baseUrl).complete(request()))).toMatchObject({ transient: false });
  });

  it('maps a non-JSON error page to a short quote of it', async () => {
    fake = await startFakeOpenAi({
      reply: () => ({ status: 502, raw: '<html>\n  <body>Bad gateway</body>\n</html>' }),
    });
    const error = await failure(provider(fake.baseUrl).complete(request()));
    expect(error.status).toBe(502);
    expect(error.message).toBe('openai-chat provider "openai": 502 <html> <body>Bad gateway</body> </html>');
  });

  it('reports a 200 reply that is not JSON', async () => {
    fake = await startFakeOpenAi({ reply: () => ({ raw: '{"choices": [' }) });
    const error = await failure(provider(fake.baseUrl).complete(request()));
    expect(error.message).toBe(
      'openai-chat provider "openai": returned a reply that is not JSON: {"choices": [',
    );
  });

  it.each([
    ['empty content', ''],
    ['null content', null],
  ])('reports %s as "returned no text"', async (_label, content) => {
    fake = await startFakeOpenAi({
      reply: () => ({ json: { choices: [{ index: 0, message: { role: 'assistant', content } }] } }),
    });
    const error = await failure(provider(fake.baseUrl).complete(request()));
    expect(error.message).toBe('openai-chat provider "openai": returned no text');
  });

  it('reports a reply without choices, using its error when it has one', async () => {
    fake = await startFakeOpenAi({ reply: () => ({ json: { id: 'x', choices: [] } }) });
    expect((await failure(provider(fake.baseUrl).complete(request()))).message).toBe(
      'openai-chat provider "openai": returned no choices',
    );
    fake.setReply(() => ({ json: { error: { message: 'Upstream rate limited', code: 429 } } }));
    expect((await failure(provider(fake.baseUrl).complete(request()))).message).toBe(
      'openai-chat provider "openai": Upstream rate limited',
    );
  });

  it('reports a refusal', async () => {
    fake = await startFakeOpenAi({
      reply: () => ({
        json: { choices: [{ message: { role: 'assistant', content: null, refusal: 'No.' } }] },
      }),
    });
    const error = await failure(provider(fake.baseUrl).complete(request()));
    expect(error.message).toBe('openai-chat provider "openai": the model refused: No.');
  });

  it('the fake rejects what the real API rejects, and the provider reports it', async () => {
    fake = await startFakeOpenAi();
    const error = await failure(provider(fake.baseUrl).complete(request({ messages: [] })));
    expect(error.status).toBe(400);
    expect(error.message).toContain("Invalid 'messages': empty array");
  });

  it('says it could not reach the host when nothing listens', async () => {
    fake = await startFakeOpenAi();
    const baseUrl = `${fake.baseUrl}`;
    const host = new URL(baseUrl).host;
    await fake.close();
    fake = undefined;
    const error = await failure(provider(baseUrl, { apiKey: KEY }).complete(request()));
    expect(error.message).toBe(`openai-chat provider "openai": could not reach ${host} (ECONNREFUSED)`);
    expect(error.status).toBeUndefined();
    expect(error.transient).toBe(true);
  });

  it('aborts a slow request promptly with the caller reason and closes the connection', async () => {
    fake = await startFakeOpenAi({ delayMs: 20_000 });
    const controller = new AbortController();
    const reason = new Error('run timed out');
    const pending = provider(fake.baseUrl).complete(request({ signal: controller.signal }));
    const aborted = fake.nextAbort();
    await waitFor(() => fake?.requests.length === 1, 'the request at the fake', 5000);
    const started = Date.now();
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(1000);
    const seen = await aborted;
    expect(seen.aborted).toBe(true);
  });

  it('rejects with an AbortError when aborted without a reason', async () => {
    fake = await startFakeOpenAi({ delayMs: 20_000 });
    const controller = new AbortController();
    const pending = provider(fake.baseUrl).complete(request({ signal: controller.signal }));
    await waitFor(() => fake?.requests.length === 1, 'the request at the fake', 5000);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('does not send anything for an already-aborted signal', async () => {
    fake = await startFakeOpenAi();
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await expect(provider(fake.baseUrl).complete(request({ signal: controller.signal }))).rejects.toThrow(
      'stopped',
    );
    expect(fake.requests).toHaveLength(0);
  });
});
