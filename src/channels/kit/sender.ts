/**
 * Sends one message to a platform described by a `Platform`: builds its request,
 * sends it through the outbound client, and turns the platform's verdict into a
 * result or a DeliveryError. The one place channel messages meet HTTP.
 */
import { type OutboundClient, OutboundError, type OutboundRequest } from '../../http/outbound.js';
import { DeliveryError, type OutboundMessage, type Platform, type SendResult } from './types.js';

export async function sendMessage(
  platform: Platform,
  client: OutboundClient,
  message: OutboundMessage,
  signal?: AbortSignal,
): Promise<SendResult> {
  // A direct message channel to open first (Discord, Mattermost): its id is the recipient.
  // Awaited only when there is a lookup, so a plain send reaches fetch without a detour.
  const resolved = platform.resolveRecipient?.(message.to, client, signal) ?? message.to;
  const to = typeof resolved === 'string' ? resolved : await resolved;
  // Checked before any request: a recipient or text the platform would refuse costs nothing.
  let request = platform.buildRequest({ ...message, to });
  let asPlain = false;
  for (let freshCredential = false; ; freshCredential = true) {
    const credentials = platform.credentials ? await platform.credentials.headers(client, signal) : {};
    const answer = await transmit(
      client,
      { ...request, headers: { ...request.headers, ...credentials } },
      signal,
    );
    const verdict = platform.interpret(answer, client.redact);
    switch (verdict.outcome) {
      case 'sent':
        return verdict.messageId === undefined ? {} : { messageId: verdict.messageId };
      case 'temporary':
        throw new DeliveryError(verdict.reason, false, verdict.retryAfterMs);
      case 'permanent':
        throw new DeliveryError(verdict.reason, true);
      case 'stale-credential':
        // Revoked or expired early: one more try with a credential fetched now.
        if (!freshCredential && platform.credentials) {
          platform.credentials.invalidate();
          continue;
        }
        throw new DeliveryError(verdict.reason, true);
      case 'markup-refused':
        // The same words without markup, once: better unformatted than undelivered.
        if (!asPlain && message.plain !== undefined) {
          asPlain = true;
          request = platform.buildRequest({ to, text: message.plain });
          continue;
        }
        throw new DeliveryError(verdict.reason, true);
    }
  }
}

/**
 * A request made before the message itself (opening a direct message channel):
 * its answer's JSON when the platform's verdict is success, else the verdict
 * as a DeliveryError, exactly as for a message.
 */
export async function lookup(
  platform: Pick<Platform, 'interpret'>,
  client: OutboundClient,
  request: OutboundRequest,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const answer = await transmit(client, request, signal);
  const verdict = platform.interpret(answer, client.redact);
  if (verdict.outcome === 'sent') return (answer.json ?? {}) as Record<string, unknown>;
  const retryAfter = verdict.outcome === 'temporary' ? verdict.retryAfterMs : undefined;
  throw new DeliveryError(verdict.reason, verdict.outcome !== 'temporary', retryAfter);
}

/** The client's send, with its failures (no answer: always temporary) as DeliveryErrors. */
export async function transmit(client: OutboundClient, request: OutboundRequest, signal?: AbortSignal) {
  try {
    return await client.send(request, signal);
  } catch (error) {
    if (error instanceof OutboundError)
      throw new DeliveryError(error.message, !error.temporary, error.retryAfterMs);
    throw error;
  }
}
