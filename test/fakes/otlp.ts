/**
 * An OTLP/HTTP trace receiver on loopback (docs/tracing.md): accepts
 * `POST /v1/traces` in both encodings the gateway's exporters send —
 * `application/x-protobuf` (an `ExportTraceServiceRequest`, decoded with
 * protobufjs from the subset of the OpenTelemetry protocol's .proto files
 * below) and `application/json` (the OTLP JSON mapping: lowerCamelCase
 * fields, hex trace and span ids, enums as integers) — gzip-compressed or
 * not, and keeps every span it received, flattened.
 *
 *     const otlp = await startFakeOtlp();
 *     // OTEL_EXPORTER_OTLP_ENDPOINT=otlp.url
 *     const [span] = await otlp.waitForSpans((s) => s.name === 'POST /hooks/{name}');
 *     await otlp.close();
 */
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { startServer } from './support.js';

/** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
export const SPAN_KIND_INTERNAL = 1;
export const SPAN_KIND_SERVER = 2;
export const SPAN_KIND_CLIENT = 3;
export const SPAN_KIND_CONSUMER = 5;
/** OTLP's Status.code: 0 unset, 1 ok, 2 error. */
export const STATUS_CODE_ERROR = 2;

export type AttributeValue = string | number | boolean | AttributeValue[] | null;

export interface ReceivedSpan {
  /** 32 lower-case hex digits. */
  traceId: string;
  /** 16 lower-case hex digits. */
  spanId: string;
  /** 16 hex digits, or '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** The spans it links to (a heartbeat's events' spans). */
  links: { traceId: string; spanId: string }[];
  status: { code: number; message: string };
  /** The attributes of the resource that sent it (service.name, …). */
  resource: Record<string, AttributeValue>;
  /** How it arrived. */
  encoding: 'protobuf' | 'json';
}

export interface ReceivedExport {
  path: string;
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface FakeOtlp {
  /** The receiver's origin, for OTEL_EXPORTER_OTLP_ENDPOINT (`/v1/traces` is added by the exporter). */
  url: string;
  /** Every export request, in order. */
  exports: ReceivedExport[];
  /** Every span received, in order. */
  spans: ReceivedSpan[];
  /** Resolves with the spans that match once at least `count` do; rejects after `timeoutMs`. */
  waitForSpans(
    match: (span: ReceivedSpan) => boolean,
    count?: number,
    timeoutMs?: number,
  ): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/**
 * The fields of opentelemetry-proto's collector/trace/v1/trace_service.proto,
 * trace/v1/trace.proto, resource/v1/resource.proto and common/v1/common.proto
 * that a receiver reads (same names and field numbers; events and dropped
 * counts are left out, so protobuf skips them as unknown fields).
 */
const OTLP_TRACE_PROTO = `
syntax = "proto3";
package otlp;

message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans {
  Resource resource = 1;
  repeated ScopeSpans scope_spans = 2;
  string schema_url = 3;
}
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans {
  InstrumentationScope scope = 1;
  repeated Span spans = 2;
  string schema_url = 3;
}
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  fixed32 flags = 16;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  repeated Link links = 13;
  Status status = 15;
}
message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; }
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
`;

const ExportTraceServiceRequest = protobuf
  .parse(OTLP_TRACE_PROTO, { keepCase: false })
  .root.lookupType('otlp.ExportTraceServiceRequest');

/** The decoded request, in the JSON mapping's shape (ids still raw: bytes or hex). */
interface Wire {
  resourceSpans?: {
    resource?: { attributes?: WireKeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId?: string;
        spanId?: string;
        parentSpanId?: string;
        name?: string;
        kind?: number;
        attributes?: WireKeyValue[];
        links?: { traceId?: string; spanId?: string }[];
        status?: { code?: number; message?: string };
      }[];
    }[];
  }[];
}
interface WireKeyValue {
  key: string;
  value?: WireAnyValue;
}
interface WireAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: WireAnyValue[] };
  kvlistValue?: { values?: WireKeyValue[] };
  bytesValue?: string;
}

function decodeProtobuf(body: Buffer): Wire {
  const message = ExportTraceServiceRequest.decode(body);
  // bytes as base64, 64-bit integers as decimal strings: the JSON mapping's own conventions,
  // except that the mapping's ids are hex (converted below).
  const object = ExportTraceServiceRequest.toObject(message, {
    longs: String,
    bytes: String,
    defaults: false,
  });
  for (const resourceSpans of (object as Wire).resourceSpans ?? []) {
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        span.traceId = base64ToHex(span.traceId);
        span.spanId = base64ToHex(span.spanId);
        span.parentSpanId = base64ToHex(span.parentSpanId);
        for (const link of span.links ?? []) {
          link.traceId = base64ToHex(link.traceId);
          link.spanId = base64ToHex(link.spanId);
        }
      }
    }
  }
  return object as Wire;
}

const base64ToHex = (value: string | undefined): string =>
  value === undefined ? '' : Buffer.from(value, 'base64').toString('hex');

function attributeValue(value: WireAnyValue | undefined): AttributeValue {
  if (value === undefined) return null;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(attributeValue);
  if (value.bytesValue !== undefined) return value.bytesValue;
  return null;
}

const attributes = (list: WireKeyValue[] | undefined): Record<string, AttributeValue> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, attributeValue(kv.value)]));

function flatten(wire: Wire, encoding: ReceivedSpan['encoding']): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of wire.resourceSpans ?? []) {
    const resource = attributes(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({
          traceId: (span.traceId ?? '').toLowerCase(),
          spanId: (span.spanId ?? '').toLowerCase(),
          parentSpanId: (span.parentSpanId ?? '').toLowerCase(),
          name: span.name ?? '',
          kind: span.kind ?? 0,
          attributes: attributes(span.attributes),
          links: (span.links ?? []).map((link) => ({
            traceId: (link.traceId ?? '').toLowerCase(),
            spanId: (link.spanId ?? '').toLowerCase(),
          })),
          status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
          resource,
          encoding,
        });
      }
    }
  }
  return spans;
}

export async function startFakeOtlp(): Promise<FakeOtlp> {
  const exports: ReceivedExport[] = [];
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const server = await startServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
    const path = req.url ?? '';
    exports.push({ path, contentType, headers: req.headers });
    if (req.method !== 'POST' || path !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    try {
      if (contentType === 'application/x-protobuf') {
        spans.push(...flatten(decodeProtobuf(body), 'protobuf'));
        // An empty ExportTraceServiceResponse: full success.
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else if (contentType === 'application/json') {
        spans.push(...flatten(JSON.parse(body.toString('utf8')) as Wire, 'json'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        res.writeHead(415).end();
        return;
      }
    } catch (error) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
      return;
    }
    for (const wake of waiters) wake();
  });
  return {
    url: server.url,
    exports,
    spans,
    waitForSpans: (match, count = 1, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = spans.filter(match);
          if (found.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `fewer than ${count} matching spans in ${timeoutMs} ms; received: ${JSON.stringify(spans)}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: () => server.close(),
  };
}
