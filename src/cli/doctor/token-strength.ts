/**
 * How guessable a token is, estimated from the token alone. Two estimates, the
 * lower wins: the alphabet it draws from (length × log2 of the character
 * classes used — hex counts as 16) and the Shannon entropy of its own
 * characters (catches repetition such as "aaaa…" or "abcabc…"). A token made of
 * one repeated chunk is weak whatever the numbers say.
 */

/** Below this many bits a token is called weak (a random 32-character hex token has about 115). */
export const WEAK_BELOW_BITS = 100;
/** The length recommended (docs/configuration.md); shorter hook tokens already warn at start. */
export const RECOMMENDED_LENGTH = 32;
/** The length below which `run` refuses a hook token. */
export const MIN_LENGTH = 16;

export interface Strength {
  length: number;
  /** Estimated bits of entropy, rounded down. */
  bits: number;
  /** Why it is weak; empty when it is not. */
  weaknesses: string[];
}

export function tokenStrength(token: string): Strength {
  const chars = [...token];
  const length = chars.length;
  const bits = Math.floor(Math.min(length * Math.log2(alphabetSize(token)), length * shannonPerChar(chars)));
  const weaknesses: string[] = [];
  if (length < RECOMMENDED_LENGTH)
    weaknesses.push(`${length} characters (use at least ${RECOMMENDED_LENGTH})`);
  if (/^(.+?)\1+$/su.test(token)) weaknesses.push('one chunk repeated');
  else if (bits < WEAK_BELOW_BITS)
    weaknesses.push(`about ${bits} bits of entropy (want ${WEAK_BELOW_BITS}+)`);
  return { length, bits, weaknesses };
}

function alphabetSize(token: string): number {
  if (/^[0-9a-f]+$/.test(token) || /^[0-9A-F]+$/.test(token)) return 16;
  let size = 0;
  if (/[a-z]/.test(token)) size += 26;
  if (/[A-Z]/.test(token)) size += 26;
  if (/[0-9]/.test(token)) size += 10;
  if (/[^a-zA-Z0-9]/.test(token)) size += 33;
  return Math.max(size, 2);
}

function shannonPerChar(chars: string[]): number {
  const counts = new Map<string, number>();
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let entropy = 0;
  for (const count of counts.values()) {
    const p = count / chars.length;
    entropy -= p * Math.log2(p);
  }
  return entropy;
}
