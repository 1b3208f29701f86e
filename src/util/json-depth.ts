/**
 * The nesting bound of JSON request bodies (docs/errors.md, "Nesting depth"): a
 * body nested deeper than MAX_JSON_DEPTH arrays and objects is refused before it
 * is parsed, so nothing later (JSON.stringify of a payload, a template, a
 * transform's structured clone) can run out of stack on it.
 */

/**
 * Levels of arrays and objects a body may nest, the body's own object being
 * level 1. Common webhook payloads (GitHub, Stripe, Slack) nest 5 to 10 levels;
 * the stack gave out between 4,000 and 5,000. Why 64 and not more: docs/errors.md.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
/** `[` (0x5b) and `{` (0x7b) differ in bit 0x20 only; so do `]` (0x5d) and `}` (0x7d). */
const CASE_BIT = 0x20;
const CLOSE_BRACE = 0x7d;

/**
 * Bytes of a string read one by one before the rest is searched for its closing
 * quote with indexOf: short strings (keys, most values) never pay for a call, and
 * at most one call per this many bytes read bounds what calls cost on any body.
 */
const INLINE_BYTES = 16;

/**
 * Whether the UTF-8 JSON text in `bytes` nests arrays and objects deeper than
 * `limit`. Exact for valid JSON; for bytes that are not JSON the answer may be
 * either, and JSON.parse refuses them anyway. (UTF-8 is safe to scan byte by
 * byte: no byte of a multi-byte character is below 0x80.)
 *
 * First bounds: valid JSON nested d deep holds at least d `[` or `{` and as many
 * closing brackets, so bytes shorter than 2 (limit + 1), or with at most `limit`
 * `[` and `{` (inside strings included), are not too deep. indexOf counts them
 * at memchr speed and stops at `limit + 1`; that settles most bodies. Otherwise
 * one pass over the bytes keeps the depth, skipping strings.
 */
export function nestedDeeperThan(bytes: Uint8Array, limit: number): boolean {
  // Shorter than `limit + 1` pairs of brackets: not that deep (small bodies stop here).
  if (bytes.length < 2 * (limit + 1)) return false;
  return hasMoreOpenersThan(bytes, limit) && depthExceeds(bytes, limit);
}

function hasMoreOpenersThan(bytes: Uint8Array, limit: number): boolean {
  let count = 0;
  for (const opener of [OPEN_BRACKET, OPEN_BRACE]) {
    for (let at = bytes.indexOf(opener); at !== -1; at = bytes.indexOf(opener, at + 1)) {
      if (++count > limit) return true;
    }
  }
  return false;
}

/**
 * One pass keeping the depth. Strings are skipped in the same loop (a helper
 * function measured twice as slow on bodies of many short strings): their first
 * INLINE_BYTES bytes one by one, then the next quote by indexOf, which ends the
 * string unless an odd run of backslashes precedes it (`\"` escapes it, `\\"` does
 * not; the run cannot reach back past the opening quote).
 */
function depthExceeds(bytes: Uint8Array, limit: number): boolean {
  const length = bytes.length;
  let depth = 0;
  let at = 0;
  next: while (at < length) {
    const byte = bytes[at++] as number;
    if (byte === QUOTE) {
      for (;;) {
        const stop = Math.min(at + INLINE_BYTES, length);
        while (at < stop) {
          const inString = bytes[at++];
          if (inString === QUOTE) continue next;
          if (inString === BACKSLASH) at++; // an escape: the next byte is never the end
        }
        if (at >= length) return false; // unterminated: not JSON
        const end = bytes.indexOf(QUOTE, at);
        if (end === -1) return false;
        let run = end;
        while (bytes[run - 1] === BACKSLASH) run--;
        at = end + 1;
        if ((end - run) % 2 === 0) continue next;
      }
    }
    const folded = byte | CASE_BIT;
    if (folded === OPEN_BRACE) {
      if (++depth > limit) return true;
    } else if (folded === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}
