/**
 * OpenTelemetry tracing (docs/tracing.md), configured only by the standard
 * `OTEL_*` environment variables. Tracing is on when an OTLP endpoint is set
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`) and
 * neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` turns it off.
 *
 * Off, nothing of the SDK is loaded: `startTracing` answers undefined and the
 * callers register no hook, create no span and do no context work. On, the SDK
 * and the exporter of `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` /
 * `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default, or `http/json`)
 * are imported then, behind a BatchSpanProcessor; the exporter is watched
 * (watched-exporter.ts): its failures are logged, rate-limited, and the stop
 * waits a bounded time for it. The SDK itself reads the
 * rest of the standard variables (headers, timeout, compression, sampler,
 * batch sizes, `OTEL_RESOURCE_ATTRIBUTES`).
 *
 * The provider is the gateway's own, not registered as the global one: several
 * gateways in one process (the tests) each export through their own.
 */
import { readFileSync } from 'node:fs';
import type { Span, Tracer } from '@opentelemetry/api';
import type { Logger } from '../log.js';
import { ExportFailures } from './export-failures.js';
import { flushWithinBound, WatchedExporter } from './watched-exporter.js';
import { type WorkSpan, type WorkSpanOptions, workSpans } from './work-span.js';

export { traceparentOf } from './work-span.js';

export type IncomingHeaders = Readonly<Record<string, string | string[] | undefined>>;

export type TracingEnv = Readonly<Record<string, string | undefined>>;

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** What tracing would do with this environment: off (and why), or where it exports. */
export type TracingSettings =
  | { enabled: false; reason: string }
  | { enabled: true; endpoint: string; protocol: OtlpProtocol };

/** A running tracer: the gateway's spans go through it, and its stop flushes them. */
export interface Tracing {
  readonly tracer: Tracer;
  /** Where the spans go (for the start-up log line): origin and path only. */
  readonly endpoint: string;
  readonly protocol: OtlpProtocol;
  /**
   * Starts a SERVER span for an incoming request, a child of the span its W3C
   * `traceparent` (and `tracestate`) names, else the root of a new trace.
   */
  startServerSpan(name: string, headers: IncomingHeaders, attributes: Record<string, string>): Span;
  /** Ends a request's span with its answer's status code; a 5xx marks it an error. */
  endServerSpan(span: Span, statusCode: number): void;
  /**
   * Starts a span of the work behind a request (a run, a model call, a delivery or
   * callback attempt, a heartbeat), continuing the stored `traceparent` it is given.
   */
  startSpan(name: string, options: WorkSpanOptions): WorkSpan;
  /**
   * Exports what is buffered and stops exporting (gateway stop), waiting at most
   * `STOP_FLUSH_MS` for the receiver.
   */
  shutdown(): Promise<void>;
}

const set = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';

/** Reads the standard variables; loads nothing. */
export function tracingSettings(env: TracingEnv): TracingSettings {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true')
    return { enabled: false, reason: 'OTEL_SDK_DISABLED is true' };
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none')
    return { enabled: false, reason: 'OTEL_TRACES_EXPORTER is none' };
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!set(traces) && !set(base))
    return { enabled: false, reason: 'no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' };
  // The signal's own endpoint is used as it is; the base one gets the signal's path.
  const endpoint = set(traces) ? traces.trim() : `${(base as string).trim().replace(/\/+$/, '')}/v1/traces`;
  const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  const protocol: OtlpProtocol = asked === 'http/json' ? 'http/json' : 'http/protobuf';
  return { enabled: true, endpoint, protocol };
}

/** The endpoint without user info, query or fragment: a log line must never carry a secret. */
export function printableEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '(an endpoint that is not a URL)';
  }
}

/**
 * Starts tracing when the environment asks for it, and logs either way;
 * undefined when off. `OTEL_EXPORTER_OTLP_HEADERS` is never logged.
 */
export async function startTracing(env: TracingEnv, log: Logger): Promise<Tracing | undefined> {
  const settings = tracingSettings(env);
  if (!settings.enabled) {
    log.info(`tracing off (${settings.reason}; docs/tracing.md)`);
    return undefined;
  }
  const protocol = settings.protocol;
  const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (set(asked) && asked !== protocol)
    log.warn(`tracing: OTEL_EXPORTER_OTLP_PROTOCOL "${asked}" is not supported; using ${protocol}`);
  const [api, core, resources, sdk, semconv, exporterModule] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/semantic-conventions'),
    protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const endpoint = printableEndpoint(settings.endpoint);
  const failures = new ExportFailures(log, endpoint);
  // The exporter reads the endpoint, headers, timeout and compression from the environment
  // itself; the URL is given only so that the one logged is the one used.
  const exporter = new WatchedExporter(
    new exporterModule.OTLPTraceExporter({ url: settings.endpoint }),
    failures,
    core.ExportResultCode.SUCCESS,
  );
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the defaults.
  const resource = resources
    .resourceFromAttributes({
      [semconv.ATTR_SERVICE_NAME]: 'agentgate',
      [semconv.ATTR_SERVICE_VERSION]: productVersion(),
    })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.BasicTracerProvider({
    resource,
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('agentgate', productVersion());
  const propagator = new core.W3CTraceContextPropagator();
  const startSpan = workSpans(api, tracer, {
    extract: (traceparent) => propagator.extract(api.ROOT_CONTEXT, { traceparent }, headerGetter),
  });
  const service = resource.attributes[semconv.ATTR_SERVICE_NAME];
  log.info({ endpoint, protocol, service }, `tracing on: exporting spans to ${endpoint} (${protocol})`);
  let stopped: Promise<void> | undefined;
  return {
    tracer,
    endpoint,
    protocol,
    startServerSpan: (name, headers, attributes) =>
      tracer.startSpan(
        name,
        { kind: api.SpanKind.SERVER, attributes },
        propagator.extract(api.ROOT_CONTEXT, headers, headerGetter),
      ),
    endServerSpan: (span, statusCode) => {
      span.setAttribute(semconv.ATTR_HTTP_RESPONSE_STATUS_CODE, statusCode);
      // Server spans: a 4xx is the caller's error, not the server's (OpenTelemetry's HTTP conventions).
      if (statusCode >= 500)
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: `HTTP ${statusCode}` });
      span.end();
    },
    startSpan,
    shutdown: () => {
      stopped ??= flushWithinBound(provider.shutdown(), exporter, failures, log, endpoint);
      return stopped;
    },
  };
}

/** Node's lower-cased incoming headers, for the propagator (a repeated header: its first value). */
const headerGetter = {
  get(carrier: IncomingHeaders, key: string): string | undefined {
    const value = carrier[key.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  },
  keys(carrier: IncomingHeaders): string[] {
    return Object.keys(carrier);
  },
};

let version: string | undefined;

/** The package's version (`service.version`), read once when tracing starts. */
function productVersion(): string {
  if (version === undefined) {
    try {
      // src/observability/ and dist/observability/ are both two levels below the package root.
      const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version?: unknown;
      };
      version = typeof pkg.version === 'string' ? pkg.version : 'unknown';
    } catch {
      version = 'unknown';
    }
  }
  return version;
}
