/**
 * Small checks and readers every platform description shares: the text a
 * platform would refuse anyway, and a platform's own error words made fit to
 * quote. Sending, time limits and redaction of secrets are the outbound
 * client's (src/http/outbound.ts) and the sender's (sender.ts).
 */
import { parseWith, RecipientError, type RecipientRules } from './recipients.js';
import { DeliveryError } from './types.js';

/** `to` as the channel's typed recipient; a form the channel does not have is a permanent failure. */
export function recipientOf<R>(channel: string, rules: RecipientRules<R>, to: string): R {
  try {
    return parseWith(channel, rules, to);
  } catch (error) {
    if (error instanceof RecipientError) throw new DeliveryError(`${channel}: ${error.message}`, true);
    throw error;
  }
}

/** A platform's own error text, redacted and cut short enough for a log line. */
export function platformText(text: unknown, scrub: (text: string) => string, max = 300): string | undefined {
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  return scrub(text).replace(/\s+/g, ' ').trim().slice(0, max);
}

/**
 * Refuses, before any request, text the platform would refuse anyway: empty
 * (after trimming) or longer than the adapter's `maxMessageLength` (the delivery
 * engine splits replies; an adapter sends one message). Lengths are UTF-16 units,
 * which never undercount a platform's characters.
 */
export function checkText(platform: string, text: string, maxLength: number): void {
  if (text.trim() === '') throw new DeliveryError(`${platform}: message text is empty`, true);
  if (text.length > maxLength) {
    throw new DeliveryError(
      `${platform}: message text is ${text.length} characters; the limit is ${maxLength}`,
      true,
    );
  }
}
