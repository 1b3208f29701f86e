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
  send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult>;
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
