/**
 * One interface for every messaging platform (`channels`; docs/platforms.md): send a
 * text to a recipient. The delivery engine around it decides what to send where.
 *
 * A platform is described, not programmed against HTTP: its folder says how to
 * build the request for one message (`Platform.buildRequest`) and what an answer
 * means (`Platform.interpret`); the shared sender (sender.ts) does the sending
 * through the outbound client, which owns time limits, network failures and
 * redaction.
 */

import type { OutboundClient, OutboundRequest, OutboundResponse } from '../../http/outbound.js';
import type { OutboundPart } from '../format/part.js';

export type { OutboundPart, TextStyle } from '../format/part.js';

export interface OutboundMessage extends OutboundPart {
  /** Recipient in one of the channel's forms of `to` (docs/recipients.md; the platform's recipients.ts). */
  to: string;
}

export interface SendResult {
  /** The platform's id for the sent message, when it returns one. */
  messageId?: string;
}

/** `Id`: the platform's id (`ChannelId` once the registry, ../platforms/index.ts, lists them). */
export interface ChannelAdapter<Id extends string = string> {
  readonly id: Id;
  /** The platform's limit for one message's text; the delivery engine splits longer replies. */
  readonly maxMessageLength: number;
  /**
   * A Markdown reply as the messages to send: the platform's native formatting,
   * split within its limit without breaking a formatted span (format/).
   */
  render(markdown: string): OutboundPart[];
  /** An operator notice as the messages to send: its text as written, plain, split within the limit. */
  renderNotice(text: string): OutboundPart[];
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

/** What a platform's answer means for the message. */
export type Verdict =
  | { outcome: 'sent'; messageId?: string }
  | { outcome: 'temporary'; reason: string; retryAfterMs?: number }
  | { outcome: 'permanent'; reason: string }
  /** The short-lived credential was refused: fetch a fresh one and try once more. */
  | { outcome: 'stale-credential'; reason: string }
  /** The platform could not parse the markup: send `plain` instead, once. */
  | { outcome: 'markup-refused'; reason: string };

export const sent = (messageId?: unknown): Verdict =>
  typeof messageId === 'string' && messageId !== ''
    ? { outcome: 'sent', messageId }
    : typeof messageId === 'number'
      ? { outcome: 'sent', messageId: String(messageId) }
      : { outcome: 'sent' };
export const temporary = (reason: string, retryAfterMs?: number): Verdict =>
  retryAfterMs === undefined
    ? { outcome: 'temporary', reason }
    : { outcome: 'temporary', reason, retryAfterMs };
export const permanent = (reason: string): Verdict => ({ outcome: 'permanent', reason });

/**
 * A platform's sending, described: no HTTP of its own. Its id, limit and formatting
 * are its descriptor's (descriptor.ts).
 */
export interface Platform {
  /** Strings that must never appear in an error: tokens, passwords, their encodings. */
  readonly secrets: readonly string[];
  /** More scrubbing for what the platform echoes back (e.g. `?password=` in a quoted URL). */
  readonly redact?: (text: string) => string;
  /**
   * Checks the recipient and the text (a DeliveryError, permanent, when they
   * cannot be sent) and describes the request that sends them.
   */
  buildRequest(message: OutboundMessage): OutboundRequest;
  /**
   * Turns a recipient that needs a lookup first (a direct message channel to
   * open) into the `to` buildRequest takes (synchronously when no lookup is
   * needed); results are the platform's to cache.
   * Throws DeliveryError.
   */
  resolveRecipient?(to: string, client: OutboundClient, signal?: AbortSignal): string | Promise<string>;
  /** What the answer means; `redact` scrubs the platform's own words before they are quoted. */
  interpret(answer: OutboundResponse, redact: (text: string) => string): Verdict;
  /** A short-lived credential fetched before sending (Teams' Bot Framework token). */
  readonly credentials?: CredentialSource;
}

export interface CredentialSource {
  /**
   * Headers carrying a cached credential, or a fresh one fetched through
   * `client`; added to the request. Throws DeliveryError.
   */
  headers(client: OutboundClient, signal?: AbortSignal): Promise<Record<string, string>>;
  /** Drops the cached credential after the platform refused it. */
  invalidate(): void;
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
