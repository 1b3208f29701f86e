/**
 * One interface for every messaging platform (`channels`; docs/platforms.md): send a
 * text to a recipient. The delivery engine around it decides what to send where.
 *
 * A platform is described, not programmed against HTTP: its module says how to
 * build the request for one message (`Platform.buildRequest`) and what an answer
 * means (`Platform.interpret`); the shared sender (sender.ts) does the sending
 * through the outbound client, which owns time limits, network failures and
 * redaction.
 */
import type { ChannelId } from '../config/schema.js';
import type { OutboundClient, OutboundRequest, OutboundResponse } from '../http/outbound.js';

export interface OutboundMessage {
  /** Recipient in one of the channel's forms of `to` (docs/recipients.md; parsed by recipients.ts). */
  to: string;
  /** The text in the platform's native formatting (render() made it), or plain text. */
  text: string;
  /**
   * The same message without markup, when `text` carries markup the platform parses
   * (Telegram HTML): sent instead if the platform refuses the markup.
   */
  plain?: string;
  /** Style ranges over `text`, which is then plain (Signal's text styles). */
  styles?: readonly TextStyle[];
  /**
   * An operator notice (an alert, built from text a sender may have chosen): sent as plain text,
   * with the platform's link previews, unfurls and embeds off (docs/platforms.md, "Operator notices").
   */
  notice?: boolean;
}

/** A styled range of a plain text, in UTF-16 units (Signal's BodyRange). */
export interface TextStyle {
  start: number;
  length: number;
  style: 'BOLD' | 'ITALIC' | 'STRIKETHROUGH' | 'MONOSPACE';
}

/** One message of a reply, rendered for its platform; `to` is added when it is sent. */
export type OutboundPart = Omit<OutboundMessage, 'to'>;

export interface SendResult {
  /** The platform's id for the sent message, when it returns one. */
  messageId?: string;
}

export interface ChannelAdapter {
  readonly id: ChannelId;
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

/** A platform, described: no HTTP of its own. */
export interface Platform {
  readonly id: ChannelId;
  readonly maxMessageLength: number;
  /** Strings that must never appear in an error: tokens, passwords, their encodings. */
  readonly secrets: readonly string[];
  /** More scrubbing for what the platform echoes back (e.g. `?password=` in a quoted URL). */
  readonly redact?: (text: string) => string;
  /**
   * Checks the recipient and the text (a DeliveryError, permanent, when they
   * cannot be sent) and describes the request that sends them.
   */
  buildRequest(message: OutboundMessage): OutboundRequest;
  /** A Markdown reply in the platform's formatting, split within `maxMessageLength`. */
  render(markdown: string): OutboundPart[];
  /** An operator notice, plain and literal (format/notice.ts), split within `maxMessageLength`. */
  renderNotice(text: string): OutboundPart[];
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
