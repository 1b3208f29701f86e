/**
 * A platform's forms of `to` (docs/recipients.md, "Recipient forms of `to`") as rules its
 * folder writes once: what the forms are, as a 400 names them, and the parser into a typed
 * recipient. The ingress checks `to` at the door with the same parser the platform uses to
 * build its request, so what is accepted is what is sent.
 *
 * The door refuses only what the platform could never accept (wrong characters, a form
 * that does not exist); never a plausible id because of its length, which the platforms do
 * not promise. A recipient the platform does not know is its answer to give, as a failed
 * delivery with its reason.
 */

export interface RecipientRules<R> {
  /** The forms the channel takes, as a 400 names them. */
  readonly expected: string;
  /** The typed recipient `to` (trimmed) names, or undefined when it names none. */
  parse(to: string): R | undefined;
}

/** Thrown by `parseWith`; the message says what was expected. */
export class RecipientError extends Error {
  constructor(
    readonly channel: string,
    readonly to: string,
    expected: string,
  ) {
    super(`not a valid ${channel} recipient: expected ${expected}`);
    this.name = 'RecipientError';
  }
}

/** The typed recipient `to` names on `channel`; throws RecipientError when it names none. */
export function parseWith<R>(channel: string, rules: RecipientRules<R>, to: string): R {
  const parsed = rules.parse(to.trim());
  if (parsed === undefined) throw new RecipientError(channel, to, rules.expected);
  return parsed;
}

// Forms more than one platform takes.
export const E164 = /^\+[1-9]\d{1,14}$/;
export const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** `channel:<id>` / `user:<id>` / a bare id, for the two platforms that share those forms. */
export function prefixedId(to: string, id: RegExp): { kind: 'channel' | 'user'; id: string } | undefined {
  const match = /^(channel|user):(.+)$/.exec(to);
  const kind = (match?.[1] as 'channel' | 'user' | undefined) ?? 'channel';
  const value = match ? (match[2] as string) : to;
  return id.test(value) ? { kind, id: value } : undefined;
}
