/**
 * Every code an error answer carries, with the one status it is answered with
 * (docs/errors.md, "Errors, in the order they are checked"; docs/operating.md,
 * "Admin error codes"). `HttpError` takes a code and finds its status here, so a
 * code missing from this table does not compile and a code cannot be answered
 * with two statuses. The one exception is a 4xx Fastify raises itself, which keeps
 * the status Fastify chose (error-answers.ts).
 */
export const ERROR_STATUS = {
  // Refused before any route is reached (Node's HTTP parser or the router):
  bad_request: 400,
  headers_too_large: 431,
  uri_too_long: 414,
  invalid_url: 400,
  // On a hook path, in the order they are checked:
  token_in_query: 400,
  method_not_allowed: 405,
  rate_limited: 429,
  ambiguous_credentials: 400,
  unauthorized: 401,
  // A hook opened by its sender's signature alone (docs/senders.md, "Signatures as the credential"):
  invalid_signature: 401,
  // A valid hook token used outside its scope or its sources (docs/senders.md):
  token_not_allowed: 403,
  source_not_allowed: 403,
  not_found: 404,
  hook_rate_limited: 429,
  payload_too_large: 413,
  request_timeout: 408,
  invalid_json: 400,
  invalid_payload: 400,
  session_key_not_allowed: 400,
  agent_not_allowed: 400,
  model_not_allowed: 400,
  channel_not_configured: 400,
  callback_not_allowed: 400,
  // A budget spent for its window (docs/budgets.md), with Retry-After:
  budget_exceeded: 429,
  // Streamed answers over their caps (docs/callers.md, "Streamed answers"):
  too_many_streams: 429,
  streams_full: 503,
  idempotency_conflict: 409,
  mapping_failed: 500,
  unavailable: 503,
  // The operators' API (docs/operating.md, "Admin error codes"):
  run_not_finished: 409,
  nothing_to_deliver: 409,
  delivery_pending: 409,
  not_waiting: 409,
  // Anything else that failed: never a client's doing.
  internal_error: 500,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;
