/** Small readers the senders share: a header's one value, a body field. */
import type { IncomingHttpHeaders } from 'node:http';
import { readHeader } from '../http/webhook-signature.js';

/** A header's value when it is sent once and not empty, else undefined. */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const read = readHeader(headers, name);
  return read.ok ? read.value : undefined;
}

/** A top-level field of a JSON object body, when it is a non-empty string or a number. */
export function bodyField(payload: unknown, name: string): string | undefined {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return undefined;
  const value = (payload as Record<string, unknown>)[name];
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value !== '' ? value : undefined;
}
