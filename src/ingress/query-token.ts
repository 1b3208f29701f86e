/**
 * Whether a request target carries a token in its query string. Query strings
 * end up in access logs and browser history, so any spelling a query parser
 * might turn into a `token` parameter counts: the key compared without regard
 * to ASCII case, after percent-decoding, and ignoring a trailing bracket part
 * (`TOKEN`, `Token`, `token[]`, `token[0]`, `to%6Ben`). The raw target is
 * scanned rather than a parsed query object, whose shape depends on the parser.
 *
 * Runs on every hook request: without a `?` it does one scan and no allocation;
 * only a key with a `%` in it is copied (to decode it).
 */
export function queryHasToken(target: string): boolean {
  const question = target.indexOf('?');
  if (question === -1) return false;
  const end = target.length;
  let start = question + 1;
  while (start < end) {
    let next = target.indexOf('&', start);
    if (next === -1) next = end;
    let keyEnd = target.indexOf('=', start);
    if (keyEnd === -1 || keyEnd > next) keyEnd = next;
    if (isTokenKey(target, start, keyEnd)) return true;
    start = next + 1;
  }
  return false;
}

const TOKEN = 'token';
const OPEN_BRACKET = 0x5b;

function isTokenKey(target: string, start: number, end: number): boolean {
  if (end - start < TOKEN.length) return false;
  const percent = target.indexOf('%', start);
  if (percent !== -1 && percent < end) {
    const key = percentDecode(target.slice(start, end));
    return isTokenName(key, 0, key.length);
  }
  return isTokenName(target, start, end);
}

/** `token`, in any ASCII case, alone or followed by a bracket part. */
function isTokenName(text: string, start: number, end: number): boolean {
  if (end - start < TOKEN.length) return false;
  for (let i = 0; i < TOKEN.length; i++) {
    // OR-ing 0x20 lowercases an ASCII letter; no other code unit maps onto t, o, k, e or n.
    if ((text.charCodeAt(start + i) | 0x20) !== TOKEN.charCodeAt(i)) return false;
  }
  return end - start === TOKEN.length || text.charCodeAt(start + TOKEN.length) === OPEN_BRACKET;
}

/**
 * Decodes each valid `%XX` to the character of that byte value. Never throws on
 * malformed input (a parser that rejects it could not see `token` there either);
 * a multi-byte UTF-8 sequence becomes non-ASCII characters, which never spell `token`.
 */
function percentDecode(text: string): string {
  return text.replace(/%([0-9a-fA-F]{2})/g, (_match, hex: string) =>
    String.fromCharCode(Number.parseInt(hex, 16)),
  );
}
