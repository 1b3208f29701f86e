/**
 * The one error type every HTTP answer of the gateway is built from:
 * `{"ok":false,"error":"<human sentence>","code":"<code>"}` (docs/endpoints.md),
 * its status the code's (error-codes.ts).
 */

import { MAX_JSON_DEPTH } from '../util/json-depth.js';
import { ERROR_STATUS, type ErrorCode } from './error-codes.js';

export type { ErrorCode } from './error-codes.js';

export class HttpError extends Error {
  /** The code's status in error-codes.ts (a Fastify 4xx keeps its own: error-answers.ts). */
  readonly statusCode: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** For `invalid_payload`: the offending field, also named in the message. */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'HttpError';
    this.statusCode = ERROR_STATUS[code];
  }

  toJSON(): Record<string, unknown> {
    const body: Record<string, unknown> = { ok: false, error: this.message, code: this.code };
    if (this.field !== undefined) body.field = this.field;
    return body;
  }
}

export const invalidPayload = (field: string, problem: string) =>
  new HttpError('invalid_payload', `${field}: ${problem}`, {}, field);

/** A body nested deeper than the bound of docs/errors.md ("Nesting depth"), refused before parsing. */
export const jsonTooDeep = () =>
  new HttpError('invalid_json', `request body is nested deeper than ${MAX_JSON_DEPTH} levels`);

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
    'not_found',
    `nothing at ${method} ${echoed(query === -1 ? url : url.slice(0, query))}`,
  );
}
