/**
 * Signal delivery through a signal-cli daemon's JSON-RPC over HTTP (docs/platforms.md:
 * `rpcUrl` is the whole endpoint, `signal-cli daemon --http` serves it at
 * `/api/v1/rpc`; man signal-cli-jsonrpc(5)). One request per message:
 * `{jsonrpc:"2.0", method:"send", params:{account, recipient:[to], message}, id}`;
 * success is `{result:{timestamp, results:[...]}}` and the timestamp identifies the
 * message in Signal. signal-cli answers HTTP 200 for JSON-RPC errors too; other
 * statuses come from the daemon's router (404/405/415: a wrong rpcUrl) or a proxy.
 *
 * Error codes, from signal-cli's SignalJsonRpcCommandHandler and the
 * signal-cli-rest-api client that relies on them: -1 user error (invalid number,
 * unregistered recipient, "Failed to send message" with per-recipient results in
 * `data.response.results`), -3 server or IO error, -4 untrusted identity (the
 * recipient's safety number changed), -5 rate limited (results may carry a proof
 * challenge `token` and `retryAfterSeconds`), -32602 invalid params (e.g. the
 * account does not exist in the daemon), -32603 internal error (an IOException
 * while sending lands here). Mapped: -5, -3, -32603, network-only failures and
 * HTTP 5xx/429 are retryable; the rest is permanent.
 *
 * If rpcUrl carries `user:password@` (signal-cli behind an authenticating proxy),
 * it is sent as Basic auth instead: fetch refuses URLs with credentials.
 *
 * `to` is an E.164 number, `uuid:<aci>` (both as `recipient`), `group:<base64>`
 * (`groupId`) or `username:<name.01>` (`username`). Replies are plain text with
 * Signal text styles beside it (`textStyle`, format/signal.ts).
 */
import { randomUUID } from 'node:crypto';
import { type OutboundResponse, retryAfterMs } from '../../../http/outbound.js';
import { checkText, platformText, recipientOf } from '../../kit/support.js';
import { type Platform, permanent, sent, temporary, type Verdict } from '../../kit/types.js';
import type { SignalConfig } from './config.js';
import type { SignalRecipient } from './recipients.js';
import { signalRecipients } from './recipients.js';

/**
 * Signal itself takes long bodies, but its clients do not show them whole: Signal
 * Desktop moves anything over 2 KiB into a long-text attachment and shows only the
 * start inline (ts/util/longAttachment.std.ts, MAX_MESSAGE_BODY_BYTE_LENGTH), the
 * phones collapse it behind "Read more". Messages of at most 2000 characters stay
 * whole on every client for ASCII text; the delivery engine splits longer replies.
 */
export const SIGNAL_TEXT_LIMIT = 2000;

interface SendFailureResult {
  type?: unknown;
  retryAfterSeconds?: unknown;
}

export function signalPlatform(config: SignalConfig): Platform {
  const { url, headers, secrets } = signalEndpoint(config.rpcUrl);
  return {
    secrets,
    buildRequest(message) {
      const recipient = recipientOf('signal', signalRecipients, message.to);
      checkText('signal', message.text, SIGNAL_TEXT_LIMIT);
      const styles = message.styles?.map((range) => `${range.start}:${range.length}:${range.style}`) ?? [];
      return {
        url,
        headers,
        json: {
          jsonrpc: '2.0',
          method: 'send',
          params: {
            account: config.account,
            ...addressee(recipient),
            message: message.text,
            // signal-cli's --text-style, as JSON-RPC takes it: "start:length:STYLE", UTF-16 offsets.
            ...(styles.length > 0 ? { textStyle: styles } : {}),
          },
          id: randomUUID(),
        },
      };
    },
    interpret,
  };
}

/** signal-cli's send parameters for each recipient form (a number or ACI uuid, a group, a username). */
function addressee(recipient: SignalRecipient): Record<string, unknown> {
  switch (recipient.kind) {
    case 'number':
      return { recipient: [recipient.number] };
    case 'uuid':
      return { recipient: [recipient.uuid] };
    case 'group':
      return { groupId: recipient.groupId };
    case 'username':
      return { username: [recipient.username] };
  }
}

/** The URL to fetch, with any `user:password@` moved into a Basic auth header. */
export function signalEndpoint(rpcUrl: string): {
  url: string;
  headers: Record<string, string>;
  secrets: string[];
} {
  const headers: Record<string, string> = { accept: 'application/json' };
  let parsed: URL;
  try {
    parsed = new URL(rpcUrl);
  } catch {
    return { url: rpcUrl, headers, secrets: [] };
  }
  if (parsed.username === '' && parsed.password === '') return { url: rpcUrl, headers, secrets: [] };
  const user = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  const secrets = [password, parsed.password].filter((secret) => secret.length >= 4);
  parsed.username = '';
  parsed.password = '';
  headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  return { url: parsed.toString(), headers, secrets };
}

function interpret(answer: OutboundResponse, scrub: (text: string) => string): Verdict {
  const { status, json } = answer;
  if (status !== 200 || !json) {
    const reason = `signal: unexpected answer (HTTP ${status})`;
    if (status === 429) return temporary(reason, retryAfterMs([answer.headers.get('retry-after')]));
    if (status === 404 || status === 405 || status === 415) {
      return permanent(`${reason}: channels.signal.rpcUrl must be signal-cli's /api/v1/rpc endpoint`);
    }
    if (status === 401 || status === 403) return permanent(`${reason}: refused by the endpoint`);
    return temporary(reason);
  }

  const error = json.error as { code?: unknown; message?: unknown; data?: unknown } | undefined;
  if (error && typeof error === 'object') return rpcError(error, scrub);

  // Neither result nor error: not a JSON-RPC answer (a proxy's JSON?), so nothing was sent.
  if (!('result' in json)) return temporary('signal: unexpected answer (no JSON-RPC result)');
  const result = json.result as { timestamp?: unknown; results?: unknown } | undefined;
  // Older signal-cli versions report a failed recipient in a successful answer.
  const failed = failedResults(result?.results);
  if (failed.length > 0) return resultsError(failed, 'signal: the message was not delivered');
  return sent(result?.timestamp);
}

function rpcError(
  error: { code?: unknown; message?: unknown; data?: unknown },
  scrub: (text: string) => string,
): Verdict {
  const code = typeof error.code === 'number' ? error.code : undefined;
  const reason = `signal: ${platformText(error.message, scrub) ?? 'error'} (JSON-RPC error ${code ?? '?'})`;
  const failed = failedResults(
    (error.data as { response?: { results?: unknown } } | undefined)?.response?.results,
  );
  switch (code) {
    case -5:
      return temporary(reason, rateLimitWait(failed));
    case -4:
      return permanent(
        `${reason}: the recipient's safety number changed; trust it with signal-cli before sending`,
      );
    case -3:
    case -32603:
      return temporary(reason);
    case -32602:
      return permanent(`${reason}: check channels.signal.account`);
    case -1:
      // "Failed to send message": the per-recipient results tell transient from final.
      return failed.length > 0 ? resultsError(failed, reason) : permanent(reason);
    case -32700:
    case -32600:
    case -32601:
      // Parse error, invalid request, unknown method: ours to fix, not to retry.
      return permanent(reason);
    default:
      // A code this adapter does not know (a newer signal-cli): a few bounded retries beat dropping it.
      return temporary(reason);
  }
}

function failedResults(results: unknown): SendFailureResult[] {
  if (!Array.isArray(results)) return [];
  return results.filter(
    (item): item is SendFailureResult =>
      item !== null && typeof item === 'object' && (item as SendFailureResult).type !== 'SUCCESS',
  );
}

/** A failure from per-recipient results: retryable only when every failure is transient. */
function resultsError(failed: SendFailureResult[], reason: string): Verdict {
  const types = new Set(failed.map((item) => String(item.type)));
  const detail = `${reason} [${[...types].join(', ')}]`;
  if (types.has('UNREGISTERED_FAILURE')) {
    return permanent(`${detail}: the recipient is not registered on Signal`);
  }
  if (types.has('IDENTITY_FAILURE')) {
    return permanent(`${detail}: the recipient's safety number changed; trust it with signal-cli`);
  }
  if ([...types].every((type) => type === 'RATE_LIMIT_FAILURE'))
    return temporary(detail, rateLimitWait(failed));
  if ([...types].every((type) => type === 'NETWORK_FAILURE' || type === 'RATE_LIMIT_FAILURE')) {
    return temporary(detail);
  }
  return permanent(detail);
}

/** The longest wait any rate-limited recipient was given. */
function rateLimitWait(failed: SendFailureResult[]): number | undefined {
  const waits = failed.map((item) => retryAfterMs([item.retryAfterSeconds])).filter((ms) => ms !== undefined);
  return waits.length > 0 ? Math.max(...waits) : undefined;
}
