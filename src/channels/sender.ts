/**
 * Sends one message to a platform described by a `Platform`: builds its request,
 * sends it through the outbound client, and turns the platform's verdict into a
 * result or a DeliveryError. The one place channel messages meet HTTP.
 */
import {
  createOutboundClient,
  type OutboundClient,
  OutboundError,
  type OutboundRequest,
} from '../http/outbound.js';
import {
  type AdapterOptions,
  type ChannelAdapter,
  DeliveryError,
  type OutboundMessage,
  type Platform,
  type SendResult,
} from './types.js';

export function createAdapter(platform: Platform, options: AdapterOptions = {}): ChannelAdapter {
  const client = createOutboundClient({
    label: platform.id,
    secrets: platform.secrets,
    redact: platform.redact,
    timeoutMs: options.timeoutMs,
    fetch: options.fetch,
  });
  return {
    id: platform.id,
    maxMessageLength: platform.maxMessageLength,
    send: (message, signal) => sendMessage(platform, client, message, signal),
  };
}

export async function sendMessage(
  platform: Platform,
  client: OutboundClient,
  message: OutboundMessage,
  signal?: AbortSignal,
): Promise<SendResult> {
  // Checked before any request: a recipient or text the platform would refuse costs nothing.
  const request = platform.buildRequest(message);
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
    }
  }
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
