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
/** `[` (0x5b) and `{` (0x7b) differ in bit 0x20 only; so do `]` (0x5d) and `}` (0x7d). */
const OPENER = 0x7b;
const CLOSER = 0x7d;
const CASE_BIT = 0x20;

/**
 * Whether `text` nests arrays and objects deeper than `limit`. Exact for valid
 * JSON; for text that is not JSON the answer may be either, and JSON.parse
 * refuses that text anyway.
 *
 * Two steps, both linear. First a bound: valid JSON nested d deep holds at least
 * d `[` or `{`, so text with at most `limit` of them (inside strings included) is
 * not too deep; String.prototype.indexOf counts them at memchr speed and stops at
 * `limit + 1`, which settles most bodies. Otherwise one pass counts the depth,
 * skipping strings: the end of a string is the next `"` (indexOf again), unless
 * a backslash precedes it, and then that string is walked escape by escape.
 */
export function nestedDeeperThan(text: string, limit: number): boolean {
  return hasMoreOpenersThan(text, limit) && depthExceeds(text, limit);
}

function hasMoreOpenersThan(text: string, limit: number): boolean {
  let count = 0;
  for (let at = text.indexOf('['); at !== -1; at = text.indexOf('[', at + 1)) {
    if (++count > limit) return true;
  }
  for (let at = text.indexOf('{'); at !== -1; at = text.indexOf('{', at + 1)) {
    if (++count > limit) return true;
  }
  return false;
}

function depthExceeds(text: string, limit: number): boolean {
  const length = text.length;
  let depth = 0;
  let at = 0;
  while (at < length) {
    const char = text.charCodeAt(at++);
    if (char === QUOTE) {
      at = afterString(text, at);
      continue;
    }
    const folded = char | CASE_BIT;
    if (folded === OPENER) {
      if (++depth > limit) return true;
    } else if (folded === CLOSER) {
      depth--;
    }
  }
  return false;
}

/** The index after the string whose content starts at `start` (past its opening quote). */
function afterString(text: string, start: number): number {
  const end = text.indexOf('"', start);
  if (end === -1) return text.length; // unterminated: not JSON
  if (text.charCodeAt(end - 1) !== BACKSLASH) return end + 1;
  // That quote may be escaped (`\"`) or follow an escaped backslash (`\\"`): walk the escapes.
  // A string is walked at most once, so the pass stays linear however many escapes it holds.
  let at = start;
  while (at < text.length) {
    const char = text.charCodeAt(at++);
    if (char === QUOTE) return at;
    if (char === BACKSLASH) at++;
  }
  return text.length;
}
