/** How a described request becomes a fetch, and an answer's body becomes text (../outbound.ts). */
import { activeTrace } from '../../observability/active-trace.js';
import type { ClientContext, OutboundRequest, OutboundResponse } from './types.js';

/** The fetch of a request, its body and headers encoded; `init` adds its signal and dispatcher. */
export function fetchRequest(
  client: ClientContext,
  request: OutboundRequest,
  init: RequestInit,
): Promise<Response> {
  const { body, contentType } = encodeBody(request);
  return client.fetch(request.url, {
    method: request.method ?? (body === undefined ? 'GET' : 'POST'),
    headers: requestHeaders(request, contentType),
    body,
    ...(request.redirect ? { redirect: request.redirect } : {}),
    ...init,
  });
}

export function answerOf(response: Response, read: { raw: string; truncated: boolean }): OutboundResponse {
  return {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
    raw: read.raw,
    truncated: read.truncated,
    json: read.truncated ? undefined : parseObject(read.raw),
  };
}

function encodeBody(request: OutboundRequest): { body?: string; contentType?: string } {
  if (request.json !== undefined) {
    return { body: JSON.stringify(request.json), contentType: request.contentType ?? 'application/json' };
  }
  if (request.form !== undefined) {
    return {
      body: new URLSearchParams(request.form).toString(),
      contentType: request.contentType ?? 'application/x-www-form-urlencoded',
    };
  }
  if (request.body !== undefined) return { body: request.body, contentType: request.contentType };
  return {};
}

/**
 * The body as text; with `max`, at most that many bytes of it, and the rest is
 * not read (cancelling the stream closes the connection).
 */
export async function readBody(
  response: Response,
  max: number | undefined,
): Promise<{ raw: string; truncated: boolean }> {
  if (max === undefined || response.body === null) return { raw: await response.text(), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { raw: decode(chunks, size), truncated: false };
    if (size + value.byteLength > max) {
      chunks.push(value.subarray(0, max - size));
      await reader.cancel().catch(() => {});
      return { raw: decode(chunks, max), truncated: true };
    }
    chunks.push(value);
    size += value.byteLength;
  }
}

/** As Response.text() decodes: UTF-8, a leading BOM dropped, bad bytes replaced. */
function decode(chunks: Uint8Array[], size: number): string {
  return new TextDecoder().decode(Buffer.concat(chunks, size));
}

/**
 * The request's headers, with its body's content type unless it set one, and inside traced work
 * the active span's `traceparent` (docs/tracing.md, "Outbound requests and logs").
 */
function requestHeaders(request: OutboundRequest, contentType: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { ...request.headers };
  if (contentType && !hasHeader(headers, 'content-type')) headers['content-type'] = contentType;
  const trace = activeTrace();
  if (trace !== undefined && !hasHeader(headers, 'traceparent')) {
    headers.traceparent = trace.traceparent;
    if (trace.tracestate) headers.tracestate = trace.tracestate;
  }
  return headers;
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

function parseObject(raw: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
