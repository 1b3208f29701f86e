/**
 * Tracing (docs/tracing.md): which OTEL_* settings turn it on, the SERVER span
 * of a hook request as an OTLP receiver gets it (both encodings), the
 * traceparent stored with what the request committed, and a gateway without
 * an endpoint that loads nothing of OpenTelemetry's SDK and sends nothing — the last
 * through the real CLI, whose process environment is the one tracing reads.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { printableEndpoint, tracingSettings } from '../../src/observability/tracing.js';
import { type FakeOtlp, SPAN_KIND_SERVER, STATUS_CODE_ERROR, startFakeOtlp } from '../fakes/otlp.js';
import { type RunningCli, startCli } from '../helpers/cli.js';
import { HOOK_TOKEN, startTestGateway, type TestGateway, tempDir, writeConfig } from '../helpers/gateway.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;

describe('tracingSettings', () => {
  it('is off without an OTLP endpoint, and when the SDK or the traces exporter is turned off', () => {
    expect(tracingSettings({}).enabled).toBe(false);
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }).enabled).toBe(false);
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(tracingSettings({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }).enabled).toBe(false);
    expect(tracingSettings({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).enabled).toBe(false);
  });

  it('exports to the base endpoint plus /v1/traces, or to the traces endpoint as given; http/protobuf unless http/json', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      enabled: true,
      endpoint: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
    });
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4318/otlp/traces',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      }),
    ).toEqual({ enabled: true, endpoint: 'http://tempo:4318/otlp/traces', protocol: 'http/json' });
    // The traces protocol wins over the general one; grpc is not built in, so http/protobuf.
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      }),
    ).toMatchObject({ protocol: 'http/protobuf' });
  });

  it('logs an endpoint without its user info or query', () => {
    expect(printableEndpoint('https://user:secret@otel.example:4318/v1/traces?key=secret')).toBe(
      'https://otel.example:4318/v1/traces',
    );
  });
});

describe('hook request spans', () => {
  let otlp: FakeOtlp;
  let gw: TestGateway | undefined;

  beforeAll(async () => {
    otlp = await startFakeOtlp();
  });
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    await otlp.close();
  });

  /**
   * A gateway in this process with tracing on: like the SDK, the gateway reads the OTEL_*
   * variables from the process environment (this file's own process: vitest forks one per file).
   */
  const start = (
    protocol: 'http/json' | 'http/protobuf' = 'http/protobuf',
    config: Record<string, unknown> = {},
  ) => {
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', otlp.url);
    vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', protocol);
    vi.stubEnv('OTEL_SERVICE_NAME', 'agentgate-under-test');
    vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '20');
    return startTestGateway(config);
  };

  it('continues an incoming traceparent: a SERVER span in that trace, with the hook and run; the run stores its traceparent (protobuf)', async () => {
    gw = await start();
    const answer = await gw.hook('agent', { message: 'build failed' }, { traceparent: TRACEPARENT });
    expect(answer.status).toBe(202);
    const runId: string = answer.body.runId;
    const [span] = await otlp.waitForSpans((s) => s.traceId === TRACE_ID);
    expect(span).toMatchObject({
      encoding: 'protobuf',
      name: 'POST /hooks/{name}',
      kind: SPAN_KIND_SERVER,
      parentSpanId: PARENT_ID,
      status: { code: 0 },
      attributes: {
        'http.request.method': 'POST',
        'http.route': '/hooks/{name}',
        'http.response.status_code': 202,
        'agentgate.hook': 'agent',
        'agentgate.run_id': runId,
      },
      resource: { 'service.name': 'agentgate-under-test', 'service.version': '0.1.0' },
    });
    const stored = await gw.gateway.store.admin.getStoredRun(runId);
    expect(stored?.run.traceParent).toBe(`00-${TRACE_ID}-${span?.spanId}-01`);
  });

  it('starts a new trace without a traceparent; a wake event stores the span; http/json', async () => {
    gw = await start('http/json');
    const answer = await gw.hook('wake', { text: 'deploy finished' });
    expect(answer.status).toBe(200);
    const eventId: string = answer.body.eventId;
    const [span] = await otlp.waitForSpans((s) => s.attributes['agentgate.event_id'] === eventId);
    expect(span).toMatchObject({ encoding: 'json', kind: SPAN_KIND_SERVER, parentSpanId: '' });
    expect(span?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(span?.traceId).not.toBe(TRACE_ID);
    const pending = await gw.gateway.store.sessions.pendingEvents('agent:main:main', 10);
    expect(pending.find((e) => e.id === eventId)?.traceParent).toBe(`00-${span?.traceId}-${span?.spanId}-01`);
  });

  it('traces a rejected request (not an error: a 4xx is the caller’s) and the run-status route', async () => {
    gw = await start();
    const traceId = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    const traceparent = `00-${traceId}-${PARENT_ID}-01`;
    const refused = await gw.hook('agent', { message: 'x' }, { traceparent, authorization: 'Bearer wrong' });
    expect(refused.status).toBe(401);
    const status = await fetch(`${gw.url}/hooks/runs/run_nope`, {
      headers: { authorization: `Bearer ${HOOK_TOKEN}`, traceparent },
    });
    expect(status.status).toBe(404);
    const spans = await otlp.waitForSpans((s) => s.traceId === traceId, 2);
    expect(
      spans.map((s) => [s.name, s.attributes['http.response.status_code'], s.status.code]).sort(),
    ).toEqual([
      ['GET /hooks/runs/{runId}', 404, 0],
      ['POST /hooks/{name}', 401, 0],
    ]);
    expect(spans.find((s) => s.name.startsWith('GET'))?.attributes['agentgate.run_id']).toBe('run_nope');
  });

  it('marks a 5xx answer as an error', async () => {
    gw = await start();
    vi.spyOn(gw.gateway.store, 'accept').mockRejectedValueOnce(new Error('the store failed'));
    const traceId = 'cccccccccccccccccccccccccccccccc';
    const failed = await gw.hook('wake', { text: 'x' }, { traceparent: `00-${traceId}-${PARENT_ID}-01` });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    const [span] = await otlp.waitForSpans((s) => s.traceId === traceId);
    expect(span?.status.code).toBe(STATUS_CODE_ERROR);
    expect(span?.attributes['http.response.status_code']).toBe(failed.status);
  });

  it('ends the span of a connection’s closing answer (413), written past Fastify', async () => {
    gw = await start('http/protobuf', { hooks: { maxBodyBytes: 100 } });
    const traceId = 'dddddddddddddddddddddddddddddddd';
    const refused = await gw.hook(
      'wake',
      { text: 'x'.repeat(200) },
      { traceparent: `00-${traceId}-${PARENT_ID}-01` },
    );
    expect(refused.status).toBe(413);
    const [span] = await otlp.waitForSpans((s) => s.traceId === traceId);
    expect(span?.attributes).toMatchObject({ 'http.response.status_code': 413, 'agentgate.hook': 'wake' });
    expect(span?.status.code).toBe(0);
  });

  it('with tracing off the run stores no traceparent', async () => {
    gw = await startTestGateway();
    const answer = await gw.hook('agent', { message: 'x' }, { traceparent: TRACEPARENT });
    const stored = await gw.gateway.store.admin.getStoredRun(answer.body.runId);
    expect(stored?.run.traceParent).toBeNull();
  });
});

describe('the CLI', () => {
  let otlp: FakeOtlp;
  let dir: string;
  let config: string;
  /**
   * Preloaded into the CLI: at exit, prints how many files of OpenTelemetry's SDK and exporters
   * Node loaded (CommonJS cache). The API package does not count: prom-client loads it anyway.
   */
  let watch: string;

  beforeAll(async () => {
    otlp = await startFakeOtlp();
    dir = tempDir();
    config = writeConfig(dir);
    watch = join(dir, 'watch-otel.cjs');
    writeFileSync(
      watch,
      `process.on('exit', () => {
        const loaded = Object.keys(require('node:module')._cache).filter(
          (f) => f.includes('/@opentelemetry/') && !f.includes('/@opentelemetry/api/'),
        );
        process.stdout.write('otel-modules-loaded=' + loaded.length + '\\n');
      });`,
    );
  });
  // A failed assertion must not leave a gateway running (it would hold the store).
  let cli: RunningCli | undefined;
  afterEach(async () => {
    await cli?.kill('SIGKILL');
    cli = undefined;
  });
  afterAll(async () => {
    await otlp.close();
  });

  const noOtel = {
    OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
    OTEL_SDK_DISABLED: undefined,
    OTEL_TRACES_EXPORTER: undefined,
  };

  it('without an OTLP endpoint: says tracing is off, loads no OpenTelemetry SDK or exporter module and sends nothing', async () => {
    const before = otlp.exports.length;
    cli = await startCli(['--config', config, '--port', '0'], {
      ...noOtel,
      AGENTGATE_LOG_LEVEL: 'info',
      NODE_OPTIONS: `--require ${watch}`,
    });
    const answer = await fetch(`${cli.url}/hooks/agent`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${HOOK_TOKEN}`,
        'content-type': 'application/json',
        traceparent: TRACEPARENT,
      },
      body: JSON.stringify({ message: 'hi' }),
    });
    expect(answer.status).toBe(202);
    await cli.kill('SIGTERM');
    const output = cli.output();
    cli = undefined;
    expect(output).toContain('tracing off');
    expect(output).toContain('otel-modules-loaded=0');
    expect(otlp.exports.length).toBe(before);
  });

  it('with OTEL_EXPORTER_OTLP_ENDPOINT: exports the hook span, and flushes it on stop', async () => {
    cli = await startCli(['--config', config, '--port', '0'], {
      ...noOtel,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      // Longer than the test: the span can only arrive through the flush on stop.
      OTEL_BSP_SCHEDULE_DELAY: '60000',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-secret=do-not-log',
      AGENTGATE_LOG_LEVEL: 'info',
      NODE_OPTIONS: `--require ${watch}`,
    });
    const traceId = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
    const answer = await fetch(`${cli.url}/hooks/agent`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${HOOK_TOKEN}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${PARENT_ID}-01`,
      },
      body: JSON.stringify({ message: 'hi' }),
    });
    expect(answer.status).toBe(202);
    expect(otlp.spans.some((s) => s.traceId === traceId)).toBe(false);
    await cli.kill('SIGTERM');
    const output = cli.output();
    cli = undefined;
    const [span] = await otlp.waitForSpans((s) => s.traceId === traceId);
    expect(span).toMatchObject({ name: 'POST /hooks/{name}', parentSpanId: PARENT_ID, encoding: 'protobuf' });
    expect(otlp.exports.at(-1)?.headers['x-secret']).toBe('do-not-log');
    expect(output).toContain(`tracing on: exporting spans to ${otlp.url}/v1/traces (http/protobuf)`);
    expect(output).not.toContain('do-not-log');
    // The check above is a real one: with tracing on, the SDK's files are in the cache.
    expect(output).toMatch(/otel-modules-loaded=[1-9]/);
  });
});
