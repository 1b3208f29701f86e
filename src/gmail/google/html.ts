/**
 * Just enough HTML handling for mail: Gmail's `snippet` arrives HTML-escaped, and a
 * message with only an HTML body still has to reach the agent as readable text. This
 * is a reducer, not a sanitizer — the result is plain text, never rendered as HTML.
 */
import { decodeHTMLStrict } from 'entities';

/**
 * A character reference that ends in `;`: hex, decimal or a name (the HTML
 * names run to 31 characters and may hold digits, e.g. `&frac12;`). Longer
 * numbers than any code point are not matched and stay as written.
 */
const REFERENCE = /&(?:#[xX]([0-9a-fA-F]{1,6})|#(\d{1,7})|[A-Za-z][A-Za-z0-9]{1,31});/g;

/**
 * Spacing references as a reader of plain text wants them: a no-break space is a
 * space, and the zero-width (non-)joiners that bulk mail pads its preview text
 * with (`&zwnj;&nbsp;` runs) are dropped, so a snippet is not a row of blanks.
 */
const SPACING: Record<string, string> = { '\u00a0': ' ', '\u200c': '', '\u200d': '' };

/**
 * Decodes named, decimal (`&#39;`) and hex (`&#x27;`) character references with
 * the `entities` library's full HTML table. Only references closed by `;` are
 * read (decodeHTMLStrict), so `a&copy=2` in a URL stays as written. A number that
 * is no Unicode character (a surrogate, above U+10FFFF) is kept as written rather
 * than turned into U+FFFD: it is the sender's text, not something to guess at.
 */
export function decodeEntities(text: string): string {
  return text.replace(REFERENCE, (whole, hex: string | undefined, decimal: string | undefined) => {
    const digits = hex ?? decimal;
    if (digits !== undefined) {
      const code = Number.parseInt(digits, hex !== undefined ? 16 : 10);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return whole;
    }
    const decoded = decodeHTMLStrict(whole);
    return SPACING[decoded] ?? decoded;
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
