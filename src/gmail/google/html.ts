/**
 * Just enough HTML handling for mail: Gmail's `snippet` arrives HTML-escaped, and a
 * message with only an HTML body still has to reach the agent as readable text. This
 * is a reducer, not a sanitizer — the result is plain text, never rendered as HTML.
 */

/** The named entities mail actually uses; anything else is left as written. */
const NAMED: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  copy: '©',
  reg: '®',
  trade: '™',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  middot: '·',
  bull: '•',
  euro: '€',
  pound: '£',
  zwnj: '',
  zwj: '',
};

/** Latin-1 letters (U+00C0–U+00FF) by their HTML names, in code point order. */
const LATIN1 =
  'Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde ' +
  'Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc ' +
  'atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc ' +
  'otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml';
LATIN1.split(' ').forEach((name, index) => {
  NAMED[name] = String.fromCharCode(0xc0 + index);
});

function fromCodePoint(code: number, original: string): string {
  // Surrogates and out-of-range values are not characters; keep the text as it was.
  if (!Number.isFinite(code) || code < 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
    return original;
  return String.fromCodePoint(code);
}

/** Decodes named, decimal (`&#39;`) and hex (`&#x27;`) character references. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#[xX][0-9a-fA-F]{1,6}|#\d{1,7}|[A-Za-z]{2,8});/g, (whole, ref: string) => {
    if (ref[0] === '#') {
      const hex = ref[1] === 'x' || ref[1] === 'X';
      return fromCodePoint(Number.parseInt(ref.slice(hex ? 2 : 1), hex ? 16 : 10), whole);
    }
    // Names are case-sensitive (&Eacute; ≠ &eacute;), but HTML also accepts &AMP;, &LT;, ….
    return NAMED[ref] ?? (ref === ref.toUpperCase() ? NAMED[ref.toLowerCase()] : undefined) ?? whole;
  });
}

/** Tags after which a reader expects a line break. */
const BLOCK_END = /<\/(p|div|li|tr|h[1-6]|blockquote|pre|table|ul|ol|section|article|header|footer)\s*>/gi;

/** HTML → plain text: scripts/styles dropped, block ends and <br> as newlines, tags stripped. */
export function htmlToText(html: string): string {
  const text = html
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<(script|style|head|title)\b[\s\S]*?<\/\1\s*>/gi, '')
    // Source line breaks are insignificant in HTML; only markup makes lines.
    .replace(/\s+/g, ' ')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<(p|div|tr|li|h[1-6]|blockquote|table)\b[^>]*>/gi, '\n')
    .replace(BLOCK_END, '\n')
    .replace(/<[^>]*>/g, '');
  return decodeEntities(text)
    .split('\n')
    .map((line) => line.replace(/[ \t\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
