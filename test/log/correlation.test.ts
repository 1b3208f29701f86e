/**
 * Log correlation and secrecy (docs/operating.md, "Logs and correlation") on a
 * real gateway over real HTTP, its log lines captured: the hook request's id is
 * logged with the runId it committed, every later line about the run (provider
 * retry, finish, delivery retry, delivery) carries that runId as a field, and
 * no token, key or auth header value appears anywhere in the output.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { type RunningGateway, startGateway } from '../../src/server/gateway.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { ADMIN_TOKEN, HOOK_TOKEN, tempDir, writeConfig } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const PROVIDER_KEY = 'sk-provider-secret-0123456789abcdef';
const BOT_TOKEN = '777:bot-secret-0123456789abcdef';
const WRONG_TOKEN = 'guess-0123456789abcdef-guess';
const CHAT = 31337;

type Line = Record<string, unknown> & { msg?: string; level: number };

/** A pino destination that keeps every line. */
function capture() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return {
    stream,
    text: () => chunks.join(''),
    lines: (): Line[] =>
      chunks
        .join('')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Line),
  };
}

describe('log correlation and secrecy', () => {
  let llm: FakeOpenAi;
  let telegram: FakeTelegram;
  let gateway: RunningGateway;
  const output = capture();

  beforeAll(async () => {
    llm = await startFakeOpenAi({ apiKey: PROVIDER_KEY });
    telegram = await startFakeTelegram({ token: BOT_TOKEN, chats: [CHAT] });
    const dir = tempDir();
    const path = writeConfig(dir, {
      models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: PROVIDER_KEY } } },
      agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
      channels: { telegram: { botToken: BOT_TOKEN, apiBaseUrl: telegram.url } },
    });
    const loaded = loadConfigFile(path, process.env);
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    gateway = await startGateway(loaded.config, createLogger('debug', output.stream), {
      port: 0,
      watchConfig: false,
      deliveryBaseDelayMs: 20,
      providerRetry: { maxCalls: 3, baseDelayMs: 10, maxDelayMs: 20 },
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await telegram?.close();
    await llm?.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it('ties the request to its run, and every line about the run carries its runId; no secret is logged', async () => {
    // The provider fails once (retried within the turn), Telegram once (retried by the engine).
    let calls = 0;
    llm.setReply(() => (++calls === 1 ? { status: 500, error: 'upstream hiccup' } : 'the report'));
    telegram.failNext(1, 'server_error');

    // Refused attempts with secrets in every place a client might put one.
    expect(
      (await post('/hooks/agent', { message: 'x' }, { authorization: `Bearer ${WRONG_TOKEN}` })).status,
    ).toBe(401);
    expect((await post('/hooks/agent', { message: 'x' }, { 'x-agentgate-token': WRONG_TOKEN })).status).toBe(
      401,
    );
    expect((await post(`/hooks/agent?token=${WRONG_TOKEN}`, { message: 'x' }, {})).status).toBe(400);
    expect(
      (await post('/hooks/agent', { message: 42 }, { authorization: `Bearer ${HOOK_TOKEN}` })).status,
    ).toBe(400);

    const accepted = await post(
      '/hooks/agent',
      { message: 'status please', channel: 'telegram', to: String(CHAT), wakeMode: 'next-heartbeat' },
      { authorization: `Bearer ${HOOK_TOKEN}` },
    );
    expect(accepted.status).toBe(202);
    const { runId } = (await accepted.json()) as { runId: string };

    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    await waitFor(
      async () => {
        const run = (await (await fetch(`${gateway.url}/api/runs/${runId}`, { headers: admin })).json()) as {
          delivery: { status: string };
        };
        return run.delivery.status === 'delivered' || undefined;
      },
      'the reply delivered',
      20_000,
    );
    expect((await fetch(`${gateway.url}/metrics`, { headers: admin })).status).toBe(200);
    expect(telegram.messagesFor(CHAT).map((m) => m.text)).toEqual(['the report']);

    const lines = output.lines();
    // The request's line: its id next to what it committed.
    const start = lines.find((line) => line.msg === 'hook accepted');
    expect(start).toMatchObject({ hook: 'agent', runId });
    expect(typeof start?.reqId).toBe('string');

    // Every line that mentions the run names it in the runId field, and the trail is complete.
    const mentioning = lines.filter((line) => JSON.stringify(line).includes(runId));
    for (const line of mentioning) expect(line.runId, JSON.stringify(line)).toBe(runId);
    const trail = mentioning.map((line) => line.msg);
    expect(trail).toEqual(
      expect.arrayContaining([
        'hook accepted',
        'run started',
        'provider call failed; retrying',
        'run finished',
        'delivery attempt failed; retrying',
        'reply delivered',
      ]),
    );
    expect(trail.indexOf('hook accepted')).toBeLessThan(trail.indexOf('run finished'));
    expect(trail.indexOf('run finished')).toBeLessThan(trail.indexOf('reply delivered'));
    expect(mentioning.find((line) => line.msg === 'reply delivered')).toMatchObject({
      channel: 'telegram',
      attempts: 2,
    });

    // No token, key or auth header value, anywhere.
    const text = output.text();
    for (const secret of [HOOK_TOKEN, ADMIN_TOKEN, WRONG_TOKEN, PROVIDER_KEY, BOT_TOKEN, 'bot-secret']) {
      expect(text).not.toContain(secret);
    }
    expect(text.toLowerCase()).not.toContain('bearer ');
  });

  it('redacts credentials handed to the logger in request headers and credential-named fields', () => {
    const out = capture();
    const log = createLogger('info', out.stream);
    log.info(
      { req: { headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'x-agentgate-token': HOOK_TOKEN } } },
      'a',
    );
    log.info({ headers: { authorization: `Bearer ${ADMIN_TOKEN}`, cookie: 'session=1' } }, 'b');
    log.info(
      { provider: { apiKey: PROVIDER_KEY }, telegram: { botToken: BOT_TOKEN }, hooks: { token: HOOK_TOKEN } },
      'c',
    );
    const text = out.text();
    for (const secret of [HOOK_TOKEN, ADMIN_TOKEN, PROVIDER_KEY, BOT_TOKEN])
      expect(text).not.toContain(secret);
    expect(out.lines().map((line) => line.msg)).toEqual(['a', 'b', 'c']);
    expect(text).toContain('[redacted]');
  });
});
