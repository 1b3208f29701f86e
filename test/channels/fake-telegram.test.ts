/**
 * The Bot API fake checks what the real API checks, so end-to-end tests that
 * use it catch a client that Telegram itself would refuse.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';

const TOKEN = '555:fake-token-for-the-fake';
let tg: FakeTelegram;

beforeAll(async () => {
  tg = await startFakeTelegram({ token: TOKEN, chats: [10, { id: -100200, username: 'Team' }] });
});
afterAll(async () => {
  await tg.close();
});

async function call(
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${tg.url}${path}`, init);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const json = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

describe('fake Telegram Bot API', () => {
  it('answers a good sendMessage in the real shape', async () => {
    const { status, body } = await call(`/bot${TOKEN}/sendMessage`, json({ chat_id: 10, text: 'hi' }));
    expect(status).toBe(200);
    expect(body).toMatchObject({
      ok: true,
      result: { message_id: 1, chat: { id: 10, type: 'private' }, text: 'hi', date: expect.any(Number) },
    });
  });

  it('takes form bodies and query strings, and usernames case-insensitively', async () => {
    const form = await call(`/bot${TOKEN}/sendmessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ chat_id: '@team', text: 'form' }).toString(),
    });
    expect(form.body).toMatchObject({ ok: true, result: { chat: { id: -100200, username: 'Team' } } });
    const query = await call(`/bot${TOKEN}/sendMessage?chat_id=10&text=query`);
    expect(query.status).toBe(200);
    expect(tg.messagesFor(10).map((m) => m.text)).toContain('query');
  });

  it('refuses what Telegram refuses', async () => {
    const cases: [string, RequestInit, number, string][] = [
      ['/bot0:wrong/sendMessage', json({ chat_id: 10, text: 'x' }), 401, 'Unauthorized'],
      ['/sendMessage', json({ chat_id: 10, text: 'x' }), 404, 'Not Found'],
      [`/bot${TOKEN}/sendPhoto`, json({ chat_id: 10 }), 404, 'Not Found'],
      [`/bot${TOKEN}/sendMessage`, json({ text: 'x' }), 400, 'Bad Request: chat_id is empty'],
      [`/bot${TOKEN}/sendMessage`, json({ chat_id: 11, text: 'x' }), 400, 'Bad Request: chat not found'],
      [
        `/bot${TOKEN}/sendMessage`,
        json({ chat_id: '@nobody', text: 'x' }),
        400,
        'Bad Request: chat not found',
      ],
      [
        `/bot${TOKEN}/sendMessage`,
        json({ chat_id: 10, text: '  ' }),
        400,
        'Bad Request: message text is empty',
      ],
      [`/bot${TOKEN}/sendMessage`, json({ chat_id: 10 }), 400, 'Bad Request: message text is empty'],
      [
        `/bot${TOKEN}/sendMessage`,
        json({ chat_id: 10, text: 'x'.repeat(4097) }),
        400,
        'Bad Request: message is too long',
      ],
    ];
    for (const [path, init, status, description] of cases) {
      const answer = await call(path, init);
      expect({ path, ...answer }).toEqual({
        path,
        status,
        body: { ok: false, error_code: status, description },
      });
    }
  });

  it('injects rate limits for the next N calls, then recovers', async () => {
    tg.failNext(2, 'rate_limit', { retryAfter: 5 });
    for (let i = 0; i < 2; i++) {
      const { status, body } = await call(`/bot${TOKEN}/sendMessage`, json({ chat_id: 10, text: 'x' }));
      expect(status).toBe(429);
      expect(body).toEqual({
        ok: false,
        error_code: 429,
        description: 'Too Many Requests: retry after 5',
        parameters: { retry_after: 5 },
      });
    }
    expect((await call(`/bot${TOKEN}/sendMessage`, json({ chat_id: 10, text: 'x' }))).status).toBe(200);
  });

  it('records requests without the token in the path', async () => {
    const last = tg.requests[tg.requests.length - 1];
    expect(last?.path).toBe('/bot<token>/sendMessage');
    expect(JSON.stringify(tg.requests)).not.toContain(TOKEN);
  });
});
