/**
 * One trace from the webhook to the reply (docs/tracing.md, "What is traced"), on
 * a real gateway in this process with every outside system on loopback: an
 * OpenAI-compatible model, Telegram, a callback receiver, and the OTLP receiver
 * that decodes what the SDK exports. Checked from both ends: the spans as the
 * receiver gets them (names, kinds, parents, attributes, status), and the
 * `traceparent` each outbound request carried, which must name the span it was
 * made in. Log lines written inside the work carry its trace id.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { type RunningGateway, startGateway } from '../../src/server/gateway.js';
import { type CallbackReceiver, startCallbackReceiver } from '../fakes/callback-receiver.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import {
  type FakeOtlp,
  type ReceivedSpan,
  SPAN_KIND_CLIENT,
  SPAN_KIND_CONSUMER,
  SPAN_KIND_INTERNAL,
  STATUS_CODE_ERROR,
  startFakeOtlp,
} from '../fakes/otlp.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { HOOK_TOKEN, tempDir, writeConfig } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const BOT_TOKEN = '777:bot-secret-0123456789abcdef';
const CHAT = 4242;
const CALLER_SPAN = '00f067aa0ba902b7';

type Line = Record<string, unknown> & { msg?: string };

function capture() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const lines = (): Line[] =>
    chunks
      .join('')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Line);
  return { stream, lines };
}

const traceparentOf = (span: ReceivedSpan | undefined) => `00-${span?.traceId}-${span?.spanId}-01`;

describe('one trace from the webhook to the reply', () => {
  let otlp: FakeOtlp;
  let llm: FakeOpenAi;
  let telegram: FakeTelegram;
  let receiver: CallbackReceiver;
  let gateway: RunningGateway | undefined;
  let log: ReturnType<typeof capture>;

  beforeAll(async () => {
    [otlp, llm, telegram, receiver] = await Promise.all([
      startFakeOtlp(),
      startFakeOpenAi(),
      startFakeTelegram({ token: BOT_TOKEN, chats: [CHAT] }),
      startCallbackReceiver(),
    ]);
  });
  afterEach(async () => {
    await gateway?.stop();
    gateway = undefined;
    vi.unstubAllEnvs();
  });
  afterAll(async () => {
    await Promise.all([otlp.close(), llm.close(), telegram.close(), receiver.close()]);
  });

  /** A gateway with workers, tracing to the loopback receiver unless `traced` is false. */
  async function start(traced = true, protocol = 'http/protobuf'): Promise<RunningGateway> {
    if (traced) {
      vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', otlp.url);
      vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', protocol);
      vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '20');
    }
    const path = writeConfig(tempDir(), {
      hooks: { callbacks: { secret: SECRET, allowedOrigins: [receiver.url] } },
      models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl } } },
      agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
      channels: { telegram: { botToken: BOT_TOKEN, apiBaseUrl: telegram.url } },
    });
    const loaded = loadConfigFile(path, process.env);
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    log = capture();
    gateway = await startGateway(loaded.config, createLogger('debug', log.stream), {
      port: 0,
      watchConfig: false,
      deliveryBaseDelayMs: 20,
      providerRetry: { maxCalls: 3, baseDelayMs: 10, maxDelayMs: 20 },
    });
    return gateway;
  }

  const post = (gw: RunningGateway, name: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/hooks/${name}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it('hook request → run → model calls → delivery attempts → callback, each request carrying its span', async () => {
    const gw = await start();
    const traceId = randomBytes(16).toString('hex');
    // The model fails once (a retried call is a span of its own), Telegram once (a second attempt).
    let calls = 0;
    llm.setReply(() => (++calls === 1 ? { status: 500, error: 'upstream hiccup' } : 'the report'));
    telegram.failNext(1, 'server_error');
    const llmBefore = llm.requests.length;
    const telegramBefore = telegram.requests.length;

    const answer = await post(
      gw,
      'agent',
      {
        message: 'status please',
        channel: 'telegram',
        to: String(CHAT),
        wakeMode: 'next-heartbeat',
        callbackUrl: `${receiver.url}/done`,
      },
      { traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
    );
    expect(answer.status).toBe(202);
    const { runId } = (await answer.json()) as { runId: string };
    await waitFor(() => receiver.received.find((r) => r.json?.runId === runId), 'the callback', 15_000);

    // server, run, two model calls, two delivery attempts, one callback attempt.
    const spans = await otlp.waitForSpans((s) => s.traceId === traceId, 7);
    const named = (name: string) => spans.filter((s) => s.name === name);
    const [server] = named('POST /hooks/{name}');
    const [run] = named('agentgate.run');
    expect(server?.parentSpanId).toBe(CALLER_SPAN);
    expect(run).toMatchObject({
      kind: SPAN_KIND_CONSUMER,
      parentSpanId: server?.spanId,
      status: { code: 0 },
    });
    expect(run?.attributes).toMatchObject({
      'agentgate.run_id': runId,
      'agentgate.hook': 'hook:agent',
      'agentgate.attempt': 1,
      'agentgate.status': 'succeeded',
    });
    expect(run?.attributes['agentgate.queue_wait_ms']).toEqual(expect.any(Number));

    const model = named('chat gpt-test').sort(
      (a, b) => Number(a.attributes['agentgate.call']) - Number(b.attributes['agentgate.call']),
    );
    expect(model).toHaveLength(2);
    for (const call of model) {
      expect(call).toMatchObject({ kind: SPAN_KIND_CLIENT, parentSpanId: run?.spanId });
      expect(call.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-test',
        'agentgate.provider': 'fake',
      });
    }
    expect(model[0]?.status.code).toBe(STATUS_CODE_ERROR);
    expect(model[0]?.attributes['error.type']).toBe('500');
    expect(model[1]?.status.code).toBe(0);
    // The answered call carries its usage (docs/usage.md); the failed one has none.
    expect(model[1]?.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 5,
    });
    expect(model[0]?.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
    // Each model request carried the span of its own call.
    expect(llm.requests.slice(llmBefore).map((r) => r.headers.traceparent)).toEqual(model.map(traceparentOf));

    const deliveries = named('agentgate.delivery').sort(
      (a, b) => Number(a.attributes['agentgate.attempt']) - Number(b.attributes['agentgate.attempt']),
    );
    expect(deliveries.map((d) => [d.kind, d.parentSpanId, d.status.code])).toEqual([
      [SPAN_KIND_CLIENT, run?.spanId, STATUS_CODE_ERROR],
      [SPAN_KIND_CLIENT, run?.spanId, 0],
    ]);
    expect(deliveries[0]?.attributes).toMatchObject({
      'agentgate.channel': 'telegram',
      'agentgate.run_id': runId,
      'error.type': 'temporary',
    });
    const sent = telegram.requests.slice(telegramBefore).filter((r) => r.path.endsWith('/sendMessage'));
    expect(sent.map((r) => r.traceparent)).toEqual(deliveries.map(traceparentOf));

    const [callback] = named('agentgate.callback');
    expect(callback).toMatchObject({
      kind: SPAN_KIND_CLIENT,
      parentSpanId: run?.spanId,
      status: { code: 0 },
    });
    expect(callback?.attributes).toMatchObject({
      'agentgate.run_id': runId,
      'http.response.status_code': 204,
      'server.address': '127.0.0.1',
    });
    const received = receiver.received.find((r) => r.json?.runId === runId);
    expect(received?.headers.traceparent).toBe(traceparentOf(callback));

    // Lines written inside the work carry the trace; the run's lines name the run's span.
    const lines = log.lines();
    expect(lines.find((line) => line.msg === 'hook accepted' && line.runId === runId)).toMatchObject({
      trace_id: traceId,
      span_id: server?.spanId,
    });
    const finished = lines.find((line) => line.msg === 'run finished' && line.runId === runId);
    expect(finished).toMatchObject({ trace_id: traceId, span_id: run?.spanId });
    const delivered = lines.find((line) => line.msg === 'reply delivered' && line.runId === runId);
    expect(delivered).toMatchObject({ trace_id: traceId, span_id: deliveries[1]?.spanId });
    expect(lines.find((line) => line.msg === 'listening')?.trace_id).toBeUndefined();
  });

  it('a run that fails marks its span and the model call as errors', async () => {
    const gw = await start();
    const traceId = randomBytes(16).toString('hex');
    llm.setReply(() => ({ status: 400, error: 'bad request: no such model' }));
    const answer = await post(
      gw,
      'agent',
      { message: 'x', wakeMode: 'next-heartbeat' },
      {
        traceparent: `00-${traceId}-${CALLER_SPAN}-01`,
      },
    );
    expect(answer.status).toBe(202);
    const spans = await otlp.waitForSpans((s) => s.traceId === traceId, 3);
    const run = spans.find((s) => s.name === 'agentgate.run');
    expect(run?.status.code).toBe(STATUS_CODE_ERROR);
    expect(run?.status.message).toContain('no such model');
    expect(run?.attributes).toMatchObject({ 'agentgate.status': 'failed', 'error.type': 'failed' });
    expect(spans.find((s) => s.name === 'chat gpt-test')?.attributes['error.type']).toBe('400');
  });

  it('a heartbeat starts a trace of its own, linked to the traces of the events it consumed (http/json)', async () => {
    const gw = await start(true, 'http/json');
    llm.setReply(() => 'HEARTBEAT_OK');
    const traces = [randomBytes(16).toString('hex'), randomBytes(16).toString('hex')];
    // The first waits for the next heartbeat; the second asks for one now, which sees both.
    expect(
      (
        await post(
          gw,
          'wake',
          { text: 'first', mode: 'next-heartbeat' },
          {
            traceparent: `00-${traces[0]}-${CALLER_SPAN}-01`,
          },
        )
      ).status,
    ).toBe(200);
    expect(
      (
        await post(
          gw,
          'wake',
          { text: 'second', mode: 'now' },
          { traceparent: `00-${traces[1]}-${CALLER_SPAN}-01` },
        )
      ).status,
    ).toBe(200);
    const [beat] = await otlp.waitForSpans(
      (s) => s.name === 'agentgate.heartbeat' && s.links.some((link) => link.traceId === traces[1]),
    );
    const wakes = await otlp.waitForSpans(
      (s) => traces.includes(s.traceId) && s.name === 'POST /hooks/{name}',
      2,
    );
    expect(beat).toMatchObject({ kind: SPAN_KIND_INTERNAL, parentSpanId: '', encoding: 'json' });
    expect(traces).not.toContain(beat?.traceId);
    expect(beat?.attributes['agentgate.event_count']).toBe(2);
    expect(beat?.links.map((link) => `${link.traceId}/${link.spanId}`).sort()).toEqual(
      wakes.map((wake) => `${wake.traceId}/${wake.spanId}`).sort(),
    );
    const [call] = await otlp.waitForSpans((s) => s.traceId === beat?.traceId && s.name === 'chat gpt-test');
    expect(call?.parentSpanId).toBe(beat?.spanId);
  });

  it('with tracing off, no request carries a traceparent and no line a trace id', async () => {
    const gw = await start(false);
    llm.setReply(() => 'plain');
    const before = llm.requests.length;
    const answer = await post(
      gw,
      'agent',
      { message: 'x', wakeMode: 'next-heartbeat' },
      {
        traceparent: `00-${'e'.repeat(32)}-${CALLER_SPAN}-01`,
      },
    );
    const { runId } = (await answer.json()) as { runId: string };
    await waitFor(
      () => log.lines().find((line) => line.msg === 'run finished' && line.runId === runId),
      'the run',
      10_000,
    );
    expect(llm.requests.slice(before).map((r) => r.headers.traceparent)).toEqual([undefined]);
    expect(log.lines().filter((line) => 'trace_id' in line)).toEqual([]);
  });
});
