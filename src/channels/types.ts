/**
 * One interface for every messaging platform (CONTRACT §3 `channels`): send a
 * text to a recipient. The delivery engine around it decides what to send where.
 */
import type { ChannelId } from '../config/schema.js';

export interface OutboundMessage {
  /** Recipient as the platform names it (chat id, channel id, phone number, ...). */
  to: string;
  text: string;
}

export interface SendResult {
  /** The platform's id for the sent message, when it returns one. */
  messageId?: string;
}

export interface ChannelAdapter {
  readonly id: ChannelId;
  /** The platform's limit for one message's text; the delivery engine splits longer replies. */
  readonly maxMessageLength: number;
  /** Sends one message (text within `maxMessageLength`). */
  send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult>;
}

/** Options every adapter factory takes. */
export interface AdapterOptions {
  /** Replaces the global fetch (tests, proxies). */
  fetch?: typeof fetch;
  /** Per-request timeout (ms); default 30 s. */
  timeoutMs?: number;
}

/**
 * A delivery failure. `permanent` failures (bad token, unknown chat) are not
 * retried; others may be, after `retryAfterMs` when the platform said so.
 * The message never contains a credential.
 */
export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'DeliveryError';
  }
}
