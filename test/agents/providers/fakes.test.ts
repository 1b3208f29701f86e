/**
 * The fakes are only worth trusting if they refuse what the real APIs refuse;
 * these pin the checks the provider tests (and later end-to-end tests) rely on.
 */
import { describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../../fakes/anthropic.js';
import { startFakeOpenAi } from '../../fakes/openai.js';

async function post(url: string, headers: Record<string, string>, body: unknown) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  // The shapes are asserted with toMatchObject; reaching into them needs no more type than this.
  type Json = { error: { type: string } } & Record<string, unknown>;
  return { status: response.status, json: (await response.json()) as Json };
}

describe('fake OpenAI', () => {
  const ok = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

  it('refuses a missing or wrong bearer token, wrong paths and bad bodies, in OpenAI error shape', async () => {
    const fake = await startFakeOpenAi({ apiKey: 'sk-right' });
    try {
      const url = `${fake.baseUrl}/chat/completions`;
      const auth = { authorization: 'Bearer sk-right' };
      expect((await post(url, {}, ok)).status).toBe(401);
      const wrong = await post(url, { authorization: 'Bearer sk-wrong-key' }, ok);
      expect(wrong.status).toBe(401);
      expect(wrong.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
      expect((await post(`${fake.url}/chat/completions`, auth, ok)).status).toBe(404);
      expect((await post(url, auth, { messages: ok.messages })).status).toBe(400);
      expect((await post(url, auth, { model: 'm', messages: [] })).status).toBe(400);
      expect((await post(url, auth, '{not json')).status).toBe(400);
      expect((await post(url, auth, { ...ok, reasoning_effort: 'extreme' })).status).toBe(400);
      const good = await post(url, auth, ok);
      expect(good.status).toBe(200);
      expect(good.json).toMatchObject({
        object: 'chat.completion',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'Fake reply to: hi' }, finish_reason: 'stop' },
        ],
      });
      expect(fake.requests).toHaveLength(8);
    } finally {
      await fake.close();
    }
  });
});

describe('fake Anthropic', () => {
  const ok = { model: 'claude', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
  const headers = { 'x-api-key': 'sk-ant-right', 'anthropic-version': '2023-06-01' };

  it('refuses what the Messages API refuses, in its error shape', async () => {
    const fake = await startFakeAnthropic({ apiKey: 'sk-ant-right' });
    try {
      const url = `${fake.url}/v1/messages`;
      const noKey = await post(url, { 'anthropic-version': '2023-06-01' }, ok);
      expect(noKey.status).toBe(401);
      expect(noKey.json).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
      expect((await post(url, { 'x-api-key': 'sk-ant-right' }, ok)).status).toBe(400);
      const bad = [
        { ...ok, max_tokens: undefined },
        { ...ok, messages: [{ role: 'assistant', content: 'hi' }] },
        { ...ok, messages: [ok.messages[0], ok.messages[0]] },
        { ...ok, messages: [{ role: 'user', content: '' }] },
        { ...ok, thinking: { type: 'enabled', budget_tokens: 512 } },
        { ...ok, thinking: { type: 'enabled', budget_tokens: 2048 } },
      ];
      for (const body of bad) {
        const reply = await post(url, headers, body);
        expect(reply.status, JSON.stringify(body)).toBe(400);
        expect(reply.json.error.type).toBe('invalid_request_error');
      }
      const good = await post(url, headers, ok);
      expect(good.status).toBe(200);
      expect(good.json).toMatchObject({
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: 'Fake reply to: hi' }],
        stop_reason: 'end_turn',
      });
    } finally {
      await fake.close();
    }
  });
});
