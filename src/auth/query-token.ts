/**
 * Whether a request target carries a token in its query string. Query strings
 * end up in access logs and browser history, so any spelling a query parser
 * might turn into a `token` parameter counts: the key compared without regard
 * to ASCII case, after percent-decoding, and ignoring a trailing bracket part
 * (`TOKEN`, `Token`, `token[]`, `token[0]`, `to%6Ben`). The raw target is
 * scanned rather than a parsed query object, whose shape depends on the parser.
 *
 * Runs on every hook request: one pass over the query string, no allocation.
 */
export function queryHasToken(target: string): boolean {
  const question = target.indexOf('?');
  if (question === -1) return false;
  // One pass over the query, so that no query string (however many keys) costs more than its length.
  let keyStart = question + 1;
  let inKey = true;
  for (let i = keyStart; i <= target.length; i++) {
    const code = i < target.length ? target.charCodeAt(i) : AMPERSAND;
    if (code === AMPERSAND) {
      if (inKey && isTokenKey(target, keyStart, i)) return true;
      keyStart = i + 1;
      inKey = true;
    } else if (inKey && code === EQUALS) {
      if (isTokenKey(target, keyStart, i)) return true;
      inKey = false;
    }
  }
  return false;
}

const TOKEN = 'token';
const AMPERSAND = 0x26;
const EQUALS = 0x3d;
const PERCENT = 0x25;
const OPEN_BRACKET = 0x5b;

/**
 * Whether `target[start, end)`, percent-decoded, is `token` in any ASCII case,
 * alone or followed by a bracket part. Decodes only the first six characters it
 * needs, in place: no copy, and no cost that grows with the key. A `%` not
 * followed by two hex digits stays a `%` (as a lenient parser keeps it); a
 * decoded byte of a multi-byte UTF-8 sequence is never an ASCII letter.
 */
function isTokenKey(target: string, start: number, end: number): boolean {
  let i = start;
  for (let n = 0; n < TOKEN.length; n++) {
    if (i >= end) return false;
    const code = decodedAt(target, i, end);
    i += code > 0xffff ? 3 : 1;
    // OR-ing 0x20 lowercases an ASCII letter; no other value maps onto t, o, k, e or n.
    if (((code & 0xffff) | 0x20) !== TOKEN.charCodeAt(n)) return false;
  }
  return i === end || (decodedAt(target, i, end) & 0xffff) === OPEN_BRACKET;
}

/**
 * The character at `i`, or the byte a `%XX` there stands for. A decoded escape
 * is flagged by adding 0x10000, so the caller knows it spans three characters.
 */
function decodedAt(text: string, i: number, end: number): number {
  const code = text.charCodeAt(i);
  if (code !== PERCENT || i + 2 >= end) return code;
  const high = hexValue(text.charCodeAt(i + 1));
  const low = hexValue(text.charCodeAt(i + 2));
  return high < 0 || low < 0 ? code : 0x10000 + high * 16 + low;
}

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}
