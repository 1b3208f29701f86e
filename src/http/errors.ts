/**
 * The one error type every HTTP answer of the gateway is built from:
 * `{"ok":false,"error":"<human sentence>","code":"<code>"}` (docs/endpoints.md).
 */
import { MAX_JSON_DEPTH } from '../util/json-depth.js';

export type ErrorCode =
  | 'token_in_query'
  | 'ambiguous_credentials'
  | 'method_not_allowed'
  | 'rate_limited'
  | 'hook_rate_limited'
  | 'unauthorized'
  // A valid hook token used outside its scope or its sources (docs/senders.md):
  | 'token_not_allowed'
  | 'source_not_allowed'
  | 'not_found'
  | 'payload_too_large'
  | 'request_timeout'
  | 'invalid_json'
  | 'invalid_payload'
  | 'session_key_not_allowed'
  | 'agent_not_allowed'
  | 'model_not_allowed'
  | 'channel_not_configured'
  | 'callback_not_allowed'
  | 'idempotency_conflict'
  // Streamed answers over their caps (docs/callers.md, "Streamed answers"):
  | 'too_many_streams'
  | 'streams_full'
  // The operators' API (docs/operating.md, "Admin error codes"):
  | 'run_not_finished'
  | 'nothing_to_deliver'
  | 'delivery_pending'
  | 'mapping_failed'
  | 'unavailable'
  | 'internal_error'
  // Refused before any route is reached (Node's HTTP parser or the router):
  | 'bad_request'
  | 'headers_too_large'
  | 'uri_too_long'
  | 'invalid_url';

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** For `invalid_payload`: the offending field, also named in the message. */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }

  toJSON(): Record<string, unknown> {
    const body: Record<string, unknown> = { ok: false, error: this.message, code: this.code };
    if (this.field !== undefined) body.field = this.field;
    return body;
  }
}

export const invalidPayload = (field: string, problem: string) =>
  new HttpError(400, 'invalid_payload', `${field}: ${problem}`, {}, field);

/** A body nested deeper than the bound of docs/errors.md ("Nesting depth"), refused before parsing. */
export const jsonTooDeep = () =>
  new HttpError(400, 'invalid_json', `request body is nested deeper than ${MAX_JSON_DEPTH} levels`);

/**
 * Most characters of the request's own text (its path, a hook or run name in it) an error
 * message repeats (docs/errors.md): a prefix is enough to tell which request it was, and an
 * answer must not grow with what the client sent.
 */
export const ECHO_MAX_CHARS = 100;

/** `text`, cut to `ECHO_MAX_CHARS` with an ellipsis when longer. */
export function echoed(text: string): string {
  return text.length <= ECHO_MAX_CHARS ? text : `${text.slice(0, ECHO_MAX_CHARS)}…`;
}

/** The 404 of a path no route takes: its method and path (never the query), bounded. */
export function nothingAt(method: string, url: string): HttpError {
  const query = url.indexOf('?');
  return new HttpError(
    404,
    'not_found',
    `nothing at ${method} ${echoed(query === -1 ? url : url.slice(0, query))}`,
  );
}
