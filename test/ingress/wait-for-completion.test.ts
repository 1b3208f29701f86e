/**
 * `waitForCompletion` (docs/callers.md, "Waiting in the answer") over real
 * HTTP, with the real worker and a loopback fake of the model: the run is
 * committed first, the answer waits for it (200 with its result) or until
 * `hooks.maxWaitSeconds` (202 with its status); a client that leaves while
 * waiting loses nothing; a replay with the same Idempotency-Key waits for the
 * same run; a stopping gateway answers its waiting requests at once.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { HOOK_TOKEN, readAnswer, startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** Model behaviour chosen by the message: `slow:<ms>` holds the reply back, `please fail` is a 400. */
async function modelReply(body: { messages: { content: unknown }[] }) {
  const last = String(body.messages.at(-1)?.content ?? '');
  const slow = /slow:(\d+)/.exec(last);
  if (slow) await sleep(Number(slow[1]));
  if (last.includes('please fail')) return { status: 400, error: 'the fake model refuses this' };
  const said = /say:(\w+)/.exec(last);
  return `reply ${said?.[1] ?? 'ok'}`;
}

function gatewayConfig(llm: FakeOpenAi, hooks: Record<string, unknown> = {}) {
  return {
    hooks: { maxWaitSeconds: 2, ...hooks },
    models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
    agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
  };
}

const agentBody = (message: string, extra: Record<string, unknown> = {}) => ({
  message,
  deliver: false,
  wakeMode: 'next-heartbeat',
  waitForCompletion: true,
  ...extra,
});

describe('waitForCompletion', () => {
  let llm: FakeOpenAi;
  let gw: TestGateway;

  beforeAll(async () => {
    llm = await startFakeOpenAi({ apiKey: 'sk-test', reply: modelReply });
    gw = await startTestGateway(
      gatewayConfig(llm, {
        mappings: [
          {
            id: 'ci',
            match: { path: 'ci' },
            messageTemplate: 'CI job say:{{job}}',
            deliver: false,
            wakeMode: 'next-heartbeat',
            waitForCompletion: true,
          },
          {
            id: 'fan',
            match: { path: 'fan' },
            forEach: 'items',
            messageTemplate: 'item say:{{n}}',
            deliver: false,
            wakeMode: 'next-heartbeat',
            waitForCompletion: true,
          },
          { id: 'plain', match: { path: 'plain' }, messageTemplate: 'plain', deliver: false },
        ],
      }),
      { workers: true },
    );
  });
  afterAll(async () => {
    await gw?.stop();
    await llm?.close();
  });

  const runCount = () => {
    const db = new Database(join(gw.dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  it('answers 200 with the finished run: status, reply, error and delivery, null fields as null', async () => {
    const answer = await gw.hook('agent', agentBody('hello say:done'));
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body)).toEqual([
      'ok',
      'runId',
      'status',
      'reply',
      'error',
      'delivery',
      'attachments',
    ]);
    expect(answer.body).toEqual({
      ok: true,
      runId: expect.stringMatching(/^run_/),
      status: 'succeeded',
      reply: 'reply done',
      error: null,
      delivery: { status: 'none', channel: null, to: null, reason: null },
      attachments: [],
    });
    // The same run as the admin API and the hook-token status endpoint show.
    const view = (await gw.admin(`/api/runs/${answer.body.runId}`)).body;
    expect(view).toMatchObject({ status: 'succeeded', reply: 'reply done' });
  });

  it('a failed run is a finished run: 200 with status failed, its error and a null reply', async () => {
    const answer = await gw.hook('agent', agentBody('please fail'));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ ok: true, status: 'failed', reply: null });
    expect(answer.body.error).toEqual(expect.stringContaining('fake model refuses'));
  });

  it('answers 202 with the status when the run does not finish within hooks.maxWaitSeconds', async () => {
    const started = Date.now();
    const answer = await gw.hook('agent', agentBody('slow:3000 say:late'));
    const waited = Date.now() - started;
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({
      ok: true,
      runId: expect.stringMatching(/^run_/),
      status: expect.stringMatching(/^(queued|running)$/),
    });
    // hooks.maxWaitSeconds is 2 here.
    expect(waited).toBeGreaterThanOrEqual(1900);
    expect(waited).toBeLessThan(4800);
    // It goes on to finish, and can be followed with the hook token.
    const done = await waitFor(async () => {
      const response = await fetch(`${gw.url}/hooks/runs/${answer.body.runId}`, {
        headers: { authorization: `Bearer ${HOOK_TOKEN}` },
      });
      const view = (await response.json()) as { status: string; reply: string | null };
      return view.status === 'succeeded' && view;
    }, 'the slow run to finish');
    expect(done.reply).toBe('reply late');
  });

  it('without waitForCompletion (or false) the answer is the usual 202 with the runId only', async () => {
    for (const waitForCompletion of [undefined, false]) {
      const answer = await gw.hook('agent', agentBody('no wait', { waitForCompletion }));
      expect(answer.status).toBe(202);
      expect(answer.body).toEqual({ ok: true, runId: expect.stringMatching(/^run_/) });
    }
  });

  it('refuses a waitForCompletion that is not a boolean: 400 invalid_payload naming it, nothing stored', async () => {
    const before = runCount();
    for (const value of ['yes', 'true', 1, 0, null, {}, []]) {
      const answer = await gw.hook('agent', agentBody('bad wait', { waitForCompletion: value }));
      expect(answer.status, JSON.stringify(value)).toBe(400);
      expect(answer.body).toMatchObject({ ok: false, code: 'invalid_payload', field: 'waitForCompletion' });
      expect(answer.body.error).toContain('waitForCompletion');
    }
    expect(runCount()).toBe(before);
  });

  it('a client that disconnects while waiting loses nothing: the run finishes, a replay gets its result', async () => {
    const key = `disconnect-${Date.now()}`;
    const body = agentBody('slow:1200 say:survived');
    const leaving = new AbortController();
    const request = fetch(`${gw.url}/hooks/agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'idempotency-key': key },
      body: JSON.stringify(body),
      signal: leaving.signal,
    });
    await waitFor(
      () => llm.requests.some((r) => JSON.stringify(r.body).includes('say:survived')),
      'the run to reach the model',
    );
    leaving.abort();
    await expect(request).rejects.toThrow();
    // The same request again: the same run (no second one), waited for until it finished.
    const replay = await gw.hook('agent', body, { 'idempotency-key': key });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toMatchObject({ ok: true, status: 'succeeded', reply: 'reply survived' });
    const calls = llm.requests.filter((r) => JSON.stringify(r.body).includes('say:survived'));
    expect(calls).toHaveLength(1);
    expect(calls[0]?.aborted).toBe(false);
  });

  it('a replay of a request that timed out waits for the same run and answers its result', async () => {
    const key = `replay-${Date.now()}`;
    const body = agentBody('slow:3000 say:again');
    const first = await gw.hook('agent', body, { 'idempotency-key': key });
    expect(first.status).toBe(202);
    expect(first.body.status).toMatch(/^(queued|running)$/);
    const replay = await gw.hook('agent', body, { 'idempotency-key': key });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ runId: first.body.runId, status: 'succeeded', reply: 'reply again' });
    // Once finished, a further replay answers at once with the same result.
    const later = await gw.hook('agent', body, { 'idempotency-key': key });
    expect(later.body).toEqual(replay.body);
  });

  it('a mapping with waitForCompletion waits; its payload cannot ask for it on a mapping without', async () => {
    const mapped = await gw.hook('ci', { job: 'build' });
    expect(mapped.status).toBe(200);
    expect(mapped.body).toMatchObject({ ok: true, status: 'succeeded', reply: 'reply build' });
    const plain = await gw.hook('plain', { waitForCompletion: true });
    expect(plain.status).toBe(202);
    expect(plain.body).toEqual({ ok: true, runId: expect.stringMatching(/^run_/) });
  });

  it('a fan-out waits for every run: 200 with runIds and one result per run', async () => {
    const answer = await gw.hook('fan', { items: [{ n: 'one' }, { n: 'two' }] });
    expect(answer.status).toBe(200);
    expect(answer.body.runIds).toHaveLength(2);
    expect(answer.body.runs).toEqual([
      expect.objectContaining({ runId: answer.body.runIds[0], status: 'succeeded', reply: 'reply one' }),
      expect.objectContaining({ runId: answer.body.runIds[1], status: 'succeeded', reply: 'reply two' }),
    ]);
  });
});

describe('waitForCompletion while the gateway stops', () => {
  it('a waiting request is answered 202 at once when the gateway stops; the run is not lost', async () => {
    const llm = await startFakeOpenAi({ apiKey: 'sk-test', reply: modelReply });
    const dir = tempDir();
    const gw = await startTestGateway(gatewayConfig(llm, { maxWaitSeconds: 60 }), { workers: true, dir });
    try {
      const request = fetch(`${gw.url}/hooks/agent`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}` },
        body: JSON.stringify(agentBody('slow:2500 say:stopping')),
      });
      await waitFor(() => llm.requests.length > 0, 'the run to reach the model');
      const stopping = gw.stop();
      const started = Date.now();
      const answer = await readAnswer(await request);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(answer.status).toBe(202);
      expect(answer.body).toEqual({ ok: true, runId: expect.stringMatching(/^run_/), status: 'running' });
      await stopping;
      // The stop let the turn finish within its grace: the run is recorded as succeeded.
      const db = new Database(join(dir, 'state', 'agentgate.db'), { readonly: true });
      const row = db.prepare('SELECT status, reply FROM runs WHERE id = ?').get(answer.body.runId);
      db.close();
      expect(row).toEqual({ status: 'succeeded', reply: 'reply stopping' });
    } finally {
      await gw.stop().catch(() => {});
      await llm.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
