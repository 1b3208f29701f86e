/**
 * The one outbound HTTP client: every call agentgate makes to another service
 * (messaging platforms, model providers, Google, completion callbacks) goes
 * through it, on Node's global fetch (undici).
 *
 * What it does, so callers don't:
 * - a time limit on every request (`timeoutMs`, default 30 s), combined with the
 *   caller's own AbortSignal;
 * - failures before an answer (timeout, refused, reset, DNS) become an
 *   OutboundError of kind `timeout` or `network`, always temporary, whose message
 *   holds only the error code (`telegram: request failed (ECONNREFUSED)`):
 *   undici's messages may quote the URL, and a URL may hold a token;
 * - the caller's own abort is rethrown as the caller's reason, untouched: it is
 *   theirs to interpret (shutdown, run timeout);
 * - every answer is read whole and returned, whatever its status
 *   (`send`); `expectOk` throws for a non-2xx answer instead, classified:
 *   408, 425, 429 and 5xx are temporary, other 4xx permanent, with the wait
 *   from `Retry-After` (seconds or an HTTP date);
 * - `stream` is `expectOk` for an answer read as it arrives (a model's streamed
 *   reply): two limits replace the single one — until the status and headers
 *   (first byte), and between two pieces of the body (idle) — so a long answer
 *   that keeps coming is never cut, and a stalled one is;
 * - on request, what a caller that must not trust the other side needs (the
 *   completion callbacks, docs/callers.md, "Retries" and "SSRF rules"): a
 *   `guard` that checks the address actually connected to (connect-guard.ts),
 *   `redirect: 'manual'` so a 3xx is the answer rather than followed, and
 *   `maxBodyBytes` so no more of the answer's body is read than that;
 * - every message it builds goes through the client's redaction: the caller
 *   names its secrets (a token in the URL path, an API key, a password) and may
 *   add its own scrubbing (patterns such as `?token=`).
 *
 * What stays with the caller: the shape of the service's answers. A caller
 * that knows better than the status (Slack's HTTP 200 `{ok:false}`, Telegram's
 * `parameters.retry_after`, Discord's `retry_after`) reads `send`'s answer and
 * decides itself, with `classifyStatus` and `retryAfterMs` as building blocks.
 *
 *     const client = createOutboundClient({ label: 'telegram', secrets: [botToken] });
 *     const answer = await client.send({ url, json: { chat_id, text } }, signal);
 *     if (answer.status === 429) wait(retryAfterMs([answer.json?.parameters?.retry_after]));
 */

import { redactor } from './outbound/kit.js';
import { expectOk, send } from './outbound/send.js';
import { stream } from './outbound/stream.js';
import {
  type ClientContext,
  DEFAULT_TIMEOUT_MS,
  type OutboundClient,
  type OutboundClientOptions,
} from './outbound/types.js';

export {
  classifyStatus,
  hostOf,
  joinUrl,
  networkCode,
  quote,
  redactor,
  retryAfterMs,
} from './outbound/kit.js';
export {
  DEFAULT_TIMEOUT_MS,
  type FailureKind,
  type OutboundClient,
  type OutboundClientOptions,
  OutboundError,
  type OutboundFailure,
  type OutboundRequest,
  type OutboundResponse,
  type OutboundStream,
  type StreamLimits,
} from './outbound/types.js';

export function createOutboundClient(options: OutboundClientOptions): OutboundClient {
  const scrubSecrets = redactor(...(options.secrets ?? []));
  const extra = options.redact;
  const client: ClientContext = {
    label: options.label,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    now: options.now ?? Date.now,
    redact: extra ? (text) => extra(scrubSecrets(text)) : scrubSecrets,
  };
  return {
    send: (request, signal) => send(client, request, signal),
    expectOk: (request, signal, describe) => expectOk(client, request, signal, describe),
    stream: (request, limits, signal, describe) => stream(client, request, limits, signal, describe),
    redact: client.redact,
    label: client.label,
  };
}
