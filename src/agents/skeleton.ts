/**
 * The detector's view of a text: its confusable skeleton with separators left
 * out, and for every skeleton character the span of the original text it came
 * from, so that a look-alike found in the skeleton can be cut out of the
 * original and nothing else is touched.
 *
 * The skeleton holds only `a`–`z` (Latin letters and their look-alikes, any
 * case), `<` and `>` (angle brackets and their look-alikes) and `#` (any other
 * letter or digit: it breaks a word). Everything else — spaces, line breaks,
 * dots, underscores, hyphens, other punctuation and symbols — is a separator
 * and leaves nothing, so `E.N D_e x\nT` reads `endext`.
 *
 * HTML character references are read as the character they stand for, as a
 * browser (or a model that knows HTML) would: `&lt;`, `&#60;`, `&#x3c;`,
 * `&laquo;`, `&Eacute;`, `&lowbar;`, and the legacy forms without `;`. So are
 * JavaScript/JSON escapes and URL encoding of one character (`\u005F`,
 * `\x3C`, `%3C`): a model reads those too.
 *
 * One pass, one table lookup per character (cached per code point): linear in
 * the length of the text.
 */
import { decodeHTML } from 'entities';
import { foldCodePoint, OTHER } from './confusables.js';

export interface Skeleton {
  /** The folded text, separators left out. */
  text: string;
  /** For skeleton position i: the original text's [start[i], end[i]) that produced it. */
  start: Int32Array;
  end: Int32Array;
}

const AMPERSAND = 0x26;
const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const OTHER_CODE = OTHER.charCodeAt(0);
/** A character reference: numeric, or a name (decoded by `entities`, which knows which names need no `;`). */
const REFERENCE = /&(?:#(?:[xX]([0-9a-fA-F]{1,8})|([0-9]{1,10}));?|[A-Za-z][A-Za-z0-9]{1,31};?)/y;

/** ASCII folds, computed once: the common case is a table read. */
const ASCII = Array.from({ length: 0x80 }, (_, code) => foldCodePoint(code));

/**
 * An HTML tag or comment, read as a separator when `tagsAsSeparators` is set
 * (`<b>END</b>_<i>EXTERNAL</i>`). Not by default: `<END EXTERNAL ...>` would be one.
 */
const TAG = /<(?:\/?[A-Za-z][A-Za-z0-9-]{0,30}(?:\s[^<>]{0,500})?\/?|!--[\s\S]{0,500}?--)>/y;
const LESS_THAN = 0x3c;

export function skeletonOf(text: string, options: { tagsAsSeparators?: boolean } = {}): Skeleton {
  const out = new Builder(text.length);
  let i = 0;
  while (i < text.length) {
    const code = text.codePointAt(i) as number;
    if (code === LESS_THAN && options.tagsAsSeparators) {
      TAG.lastIndex = i;
      if (TAG.test(text)) {
        i = TAG.lastIndex;
        continue;
      }
    }
    if (code === AMPERSAND || code === BACKSLASH || code === PERCENT) {
      const next = code === AMPERSAND ? readReference(text, i, out) : readEscape(text, i, out);
      if (next > i) {
        i = next;
        continue;
      }
    }
    const width = code > 0xffff ? 2 : 1;
    out.push(code < 0x80 ? (ASCII[code] as string) : foldCodePoint(code), i, i + width);
    i += width;
  }
  return out.finish();
}

/** A JavaScript/JSON escape (`\u005F`, `\u{5F}`, `\x5F`) or URL encoding (`%5F`) of one character. */
const ESCAPE = /\\u([0-9a-fA-F]{4})|\\u\{([0-9a-fA-F]{1,6})\}|\\x([0-9a-fA-F]{2})|%([0-9a-fA-F]{2})/y;

/** Folds the escape at `at` into `out` as the character it stands for; returns where it ends, or `at`. */
function readEscape(text: string, at: number, out: Builder): number {
  ESCAPE.lastIndex = at;
  const match = ESCAPE.exec(text);
  if (!match) return at;
  const code = Number.parseInt(match[1] ?? match[2] ?? match[3] ?? match[4] ?? '', 16);
  if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return at;
  out.push(foldCodePoint(code), at, at + match[0].length);
  return at + match[0].length;
}

/** Folds the character reference at `at` into `out`; returns where it ends, or `at` when there is none. */
function readReference(text: string, at: number, out: Builder): number {
  REFERENCE.lastIndex = at;
  const match = REFERENCE.exec(text);
  if (!match) return at;
  const [span, hex, decimal] = match;
  if (hex !== undefined || decimal !== undefined) {
    const code = hex !== undefined ? Number.parseInt(hex, 16) : Number(decimal);
    if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return at;
    out.push(foldCodePoint(code), at, at + span.length);
    return at + span.length;
  }
  const { decoded, length } = decodeNamed(span);
  if (length === 0) return at;
  let folded = '';
  for (const char of decoded) folded += foldCodePoint(char.codePointAt(0) as number);
  out.push(folded, at, at + length);
  return at + length;
}

const namedCache = new Map<string, { decoded: string; length: number }>();

/**
 * Decodes the longest character reference at the start of `span` (`&ltEND` is
 * `<` then `END`): `entities` decodes the whole span, and whatever it left as
 * it was at the end is not part of the reference.
 */
function decodeNamed(span: string): { decoded: string; length: number } {
  let result = namedCache.get(span);
  if (result === undefined) {
    const whole = decodeHTML(span);
    let kept = 0;
    while (
      kept < whole.length &&
      kept < span.length - 1 &&
      whole[whole.length - 1 - kept] === span[span.length - 1 - kept]
    ) {
      kept++;
    }
    result =
      whole === span
        ? { decoded: '', length: 0 }
        : { decoded: whole.slice(0, whole.length - kept), length: span.length - kept };
    if (namedCache.size > 4096) namedCache.clear();
    namedCache.set(span, result);
  }
  return result;
}

/** Appends folded characters and their source spans; grows as needed (a fold may be longer than its source). */
class Builder {
  private chars: Uint8Array;
  private start: Int32Array;
  private end: Int32Array;
  private length = 0;

  constructor(capacity: number) {
    this.chars = new Uint8Array(capacity + 16);
    this.start = new Int32Array(capacity + 16);
    this.end = new Int32Array(capacity + 16);
  }

  push(folded: string, from: number, to: number): void {
    for (let k = 0; k < folded.length; k++) {
      const char = folded.charCodeAt(k);
      // Consecutive breaks are one break: widen the previous one instead.
      if (char === OTHER_CODE && this.length > 0 && this.chars[this.length - 1] === OTHER_CODE) {
        this.end[this.length - 1] = to;
        continue;
      }
      if (this.length === this.chars.length) this.grow();
      this.chars[this.length] = char;
      this.start[this.length] = from;
      this.end[this.length] = to;
      this.length++;
    }
  }

  finish(): Skeleton {
    return {
      text: Buffer.from(this.chars.buffer, 0, this.length).toString('latin1'),
      start: this.start.subarray(0, this.length),
      end: this.end.subarray(0, this.length),
    };
  }

  private grow(): void {
    const size = this.chars.length * 2;
    const chars = new Uint8Array(size);
    chars.set(this.chars);
    const start = new Int32Array(size);
    start.set(this.start);
    const end = new Int32Array(size);
    end.set(this.end);
    this.chars = chars;
    this.start = start;
    this.end = end;
  }
}
