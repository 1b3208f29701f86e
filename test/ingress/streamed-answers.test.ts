/**
 * Streamed answers (docs/callers.md, "Streamed answers") over real HTTP, with the real
 * worker on SQLite and loopback fakes of OpenAI and Anthropic speaking their streaming
 * wire formats: the events and their order, deltas that join to the reply for each
 * provider and for echo, keep-alive comments, the timeout past hooks.maxWaitSeconds
 * (the run goes on), a client that leaves mid-stream (the run goes on), errors before
 * the commit answered as JSON, idempotent replays, and failed runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type Answer, HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { isStream, type OpenStream, postStream } from '../helpers/sse.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** What the model does, chosen by the message: `slow:<ms>`, `please fail`, `break`, `pieces:<n>`. */
async function modelReply(body: { messages: { content: unknown }[] }) {
  const last = String(body.messages.at(-1)?.content ?? '');
  const slow = /slow:(\d+)/.exec(last);
  if (slow) await sleep(Number(slow[1]));
  if (last.includes('please fail')) return { status: 400, error: 'the fake model refuses this' };
  if (last.includes('break')) return { stream: ['half ', 'a '], fail: { error: 'the upstream broke' } };
  const many = /pieces:(\d+)/.exec(last);
  if (many) return { stream: Array.from({ length: Number(many[1]) }, (_, i) => `p${i} `) };
  const said = /say:(\w+)/.exec(last);
  return `the streamed reply ${said?.[1] ?? 'ok'} in a few words`;
}

const agentBody = (message: string, extra: Record<string, unknown> = {}) => ({
  message,
  deliver: false,
  wakeMode: 'next-heartbeat',
  ...extra,
});

const KEEP_ALIVE_MS = 100;

describe('streamed answers (SQLite)', () => {
  let llm: FakeOpenAi;
  let claude: FakeAnthropic;
  let gw: TestGateway;

  beforeAll(async () => {
    llm = await startFakeOpenAi({ apiKey: 'sk-test', reply: modelReply, streamDelayMs: 30 });
    claude = await startFakeAnthropic({ apiKey: 'sk-ant-test', reply: modelReply, streamDelayMs: 30 });
    gw = await startTestGateway(
      {
        hooks: {
          maxWaitSeconds: 2,
          mappings: [
            {
              id: 'ci',
              match: { path: 'ci' },
              messageTemplate: 'CI job say:{{job}}',
              deliver: false,
              wakeMode: 'next-heartbeat',
            },
          ],
        },
        models: {
          providers: {
            fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' },
            claude: { api: 'anthropic-messages', baseUrl: claude.url, apiKey: 'sk-ant-test' },
            echo: { api: 'echo' },
          },
        },
        agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
      },
      { workers: true, streamKeepAliveMs: KEEP_ALIVE_MS },
    );
  });
  afterAll(async () => {
    await gw?.stop();
    await llm?.close();
    await claude?.close();
  });

  const stream = async (body: unknown, headers: Record<string, string> = {}): Promise<OpenStream> => {
    const answer = await postStream(`${gw.url}/hooks/agent`, body, headers);
    if (!isStream(answer)) throw new Error(`not a stream: ${answer.status} ${answer.text}`);
    return answer;
  };
  const runView = async (runId: string) => {
    const response = await fetch(`${gw.url}/hooks/runs/${runId}`, {
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    });
    return response.json() as Promise<Record<string, unknown>>;
  };
  const names = (s: OpenStream) => s.events.map((e) => e.event);

  it.each([
    ['openai-chat', 'fake/gpt-test'],
    ['anthropic-messages', 'claude/claude-test'],
  ])('%s: accepted, the deltas as the model streams them, finished with the RunView', async (api, model) => {
    const s = await stream(agentBody(`hello say:${api.replace('-', '')}`, { model }));
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    await s.ended;
    const list = names(s);
    expect(list[0]).toBe('accepted');
    expect(list.at(-1)).toBe('finished');
    // Several deltas, one per piece the model sent, and nothing else between.
    expect(list.slice(1, -1).every((name) => name === 'delta')).toBe(true);
    expect(list.length).toBeGreaterThan(4);
    const [accepted] = s.events;
    const finished = s.events.at(-1);
    expect(accepted?.data).toEqual({ runId: expect.stringMatching(/^run_/) });
    expect(finished?.data).toMatchObject({ runId: accepted?.data.runId, status: 'succeeded' });
    const expected = `the streamed reply ${api.replace('-', '')} in a few words`;
    expect(finished?.data.reply).toBe(expected);
    expect(s.joined()).toBe(expected);
    // The deltas came as the model streamed them (30 ms apart), not all at the end.
    const deltas = s.events.filter((e) => e.event === 'delta');
    expect((deltas.at(-1)?.at ?? 0) - (deltas[0]?.at ?? 0)).toBeGreaterThanOrEqual(60);
    // `finished` is the RunView as GET {hooks.path}/runs/{id} gives it.
    expect(finished?.data).toEqual(await runView(accepted?.data.runId));
    // The provider was asked for a stream.
    const fake = model.startsWith('fake') ? llm.requests : claude.requests;
    expect(fake.at(-1)?.body.stream).toBe(true);
  });

  it('echo (no stream of its own): one delta with the whole reply', async () => {
    const s = await stream(agentBody('hello echo', { model: 'echo/echo' }));
    await s.ended;
    expect(names(s)).toEqual(['accepted', 'delta', 'finished']);
    expect(s.joined()).toBe(s.events[2]?.data.reply);
    expect(s.joined()).toContain('hello echo');
  });

  it("a mapping's single agent action streams too; a wake is answered as usual", async () => {
    const mapped = await postStream(`${gw.url}/hooks/ci`, { job: 'mapped' });
    if (!isStream(mapped)) throw new Error(`not a stream: ${mapped.status} ${mapped.text}`);
    await mapped.ended;
    expect(names(mapped)[0]).toBe('accepted');
    expect(names(mapped).at(-1)).toBe('finished');
    expect(mapped.joined()).toBe('the streamed reply mapped in a few words');
    const wake = (await postStream(`${gw.url}/hooks/wake`, {
      text: 'ping',
      mode: 'next-heartbeat',
    })) as Answer;
    expect(isStream(wake)).toBe(false);
    expect(wake.status).toBe(200);
    expect(wake.body).toMatchObject({ ok: true, eventOutcome: 'queued' });
  });

  it('a run accepted without the header does not stream: the provider is called as before', async () => {
    const answer = await gw.hook('agent', agentBody('plain say:unstreamed'));
    expect(answer.status).toBe(202);
    expect(answer.headers.get('content-type')).toContain('application/json');
    await waitFor(async () => (await runView(answer.body.runId)).status === 'succeeded', 'the run');
    const call = llm.requests.find((r) => JSON.stringify(r.body).includes('say:unstreamed'));
    expect(call?.body.stream).toBeUndefined();
  });

  it('sends keep-alive comments while the model is silent', async () => {
    const s = await stream(agentBody('slow:700 say:patient'));
    await s.ended;
    expect(s.comments.filter((c) => c.trim() === 'keep-alive').length).toBeGreaterThanOrEqual(4);
    expect(s.events.at(-1)?.data).toMatchObject({ status: 'succeeded' });
  });

  it('past hooks.maxWaitSeconds: event timeout with the status, the stream ends, the run goes on', async () => {
    const started = Date.now();
    const s = await stream(agentBody('slow:3000 say:late'));
    await s.ended;
    const waited = Date.now() - started;
    expect(names(s)).toEqual(['accepted', 'timeout']);
    const runId = s.events[0]?.data.runId;
    expect(s.events[1]?.data).toEqual({ runId, status: expect.stringMatching(/^(queued|running)$/) });
    expect(waited).toBeGreaterThanOrEqual(1900);
    expect(waited).toBeLessThan(3500);
    const done = await waitFor(async () => {
      const view = await runView(runId);
      return view.status === 'succeeded' && view;
    }, 'the run to finish after its stream timed out');
    expect(done.reply).toBe('the streamed reply late in a few words');
  });

  it('a client that disconnects mid-stream ends only its stream: the run finishes, its reply recorded', async () => {
    const s = await stream(agentBody('pieces:30 leaving'));
    const runId = (await s.next('accepted')).data.runId;
    await s.next('delta');
    s.abort();
    await s.ended;
    const done = await waitFor(async () => {
      const view = await runView(runId);
      return view.status === 'succeeded' && view;
    }, 'the run to finish after its client left');
    expect(done.reply).toBe(Array.from({ length: 30 }, (_, i) => `p${i} `).join(''));
    // The model call was not cut either.
    const call = llm.requests.find((r) => JSON.stringify(r.body).includes('pieces:30 leaving'));
    expect(call?.aborted).toBe(false);
  });

  it('errors before the commit are the usual JSON answers (401, 400)', async () => {
    const unauthorized = (await postStream(`${gw.url}/hooks/agent`, agentBody('x'), {
      authorization: 'Bearer wrong-token-0123456789abcdef',
    })) as Answer;
    expect(isStream(unauthorized)).toBe(false);
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('content-type')).toContain('application/json');
    expect(unauthorized.body).toMatchObject({ ok: false, code: 'unauthorized' });
    const invalid = (await postStream(`${gw.url}/hooks/agent`, { deliver: false })) as Answer;
    expect(isStream(invalid)).toBe(false);
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({ ok: false, code: 'invalid_payload' });
  });

  it('an idempotent replay streams the same run: accepted, the whole reply as one delta, finished', async () => {
    const key = `stream-replay-${Date.now()}`;
    const body = agentBody('hello say:twice');
    const first = await stream(body, { 'idempotency-key': key });
    await first.ended;
    const runId = first.events[0]?.data.runId;
    const replay = await stream(body, { 'idempotency-key': key });
    await replay.ended;
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(names(replay)).toEqual(['accepted', 'delta', 'finished']);
    expect(replay.events[0]?.data).toEqual({ runId });
    expect(replay.joined()).toBe('the streamed reply twice in a few words');
    expect(replay.events[2]?.data).toEqual(first.events.at(-1)?.data);
    // Without the header, the replay is the first request's stored answer, as always.
    const plain = await gw.hook('agent', body, { 'idempotency-key': key });
    expect(plain.status).toBe(202);
    expect(plain.body).toEqual({ ok: true, runId });
    expect(llm.requests.filter((r) => JSON.stringify(r.body).includes('say:twice'))).toHaveLength(1);
  });

  it('a failed run: finished with status failed and its error, no delta', async () => {
    const s = await stream(agentBody('please fail'));
    await s.ended;
    expect(names(s)).toEqual(['accepted', 'finished']);
    expect(s.events[1]?.data).toMatchObject({ status: 'failed', reply: null });
    expect(s.events[1]?.data.error).toContain('fake model refuses');
  });

  it('a stream that fails after some deltas is not retried: the run fails with what was sent', async () => {
    const s = await stream(agentBody('break now'));
    await s.ended;
    expect(names(s)).toEqual(['accepted', 'delta', 'delta', 'finished']);
    expect(s.joined()).toBe('half a ');
    expect(s.events[3]?.data).toMatchObject({ status: 'failed', reply: null });
    expect(s.events[3]?.data.error).toContain('the upstream broke');
    // A transient error, yet one call only: the deltas sent cannot be taken back.
    expect(llm.requests.filter((r) => JSON.stringify(r.body).includes('break now'))).toHaveLength(1);
  });
});

describe('streamed answers while the gateway stops', () => {
  it('a stopping gateway ends its streams at once with timeout and the run status', async () => {
    const llm = await startFakeOpenAi({ apiKey: 'sk-test', reply: modelReply });
    const gw = await startTestGateway(
      {
        hooks: { maxWaitSeconds: 30 },
        models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
        agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
      },
      { workers: true },
    );
    try {
      const s = await postStream(`${gw.url}/hooks/agent`, agentBody('slow:1000 say:stopping'));
      if (!isStream(s)) throw new Error(`not a stream: ${s.status} ${s.text}`);
      await s.next('accepted');
      await waitFor(() => llm.requests.length > 0, 'the run to reach the model');
      const stopping = gw.stop();
      const ended = await s.next('timeout', 3000);
      expect(ended.data).toEqual({ runId: s.events[0]?.data.runId, status: 'running' });
      await s.ended;
      await stopping;
    } finally {
      await llm.close();
    }
  });
});

describe('streamed answers and a run started over', () => {
  it('the stream keeps to the first execution it saw; a second one (a takeover) is not mixed in', async () => {
    // No workers: the test plays the worker through the gateway's own hub.
    const gw = await startTestGateway({ hooks: { maxWaitSeconds: 1 } }, { workers: false });
    try {
      const s = await postStream(`${gw.url}/hooks/agent`, agentBody('started over'));
      if (!isStream(s)) throw new Error(`not a stream: ${s.status} ${s.text}`);
      const runId = (await s.next('accepted')).data.runId;
      const first = gw.gateway.deltas.open(runId);
      first.push('first ');
      const second = gw.gateway.deltas.open(runId);
      second.push('other ');
      first.push('again');
      await s.ended;
      expect(s.events.map((e) => e.event)).toEqual(['accepted', 'delta', 'delta', 'timeout']);
      expect(s.joined()).toBe('first again');
      expect(s.events[3]?.data).toEqual({ runId, status: 'queued' });
    } finally {
      await gw.stop();
    }
  });
});
