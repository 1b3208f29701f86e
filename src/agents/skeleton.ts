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
  start: readonly number[];
  end: readonly number[];
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
 * The same as character codes, 0 for none: an ASCII fold is at most two
 * characters (`m` reads `rn`). Pushed straight into the builder, a webhook's
 * mostly-ASCII text costs a table read per character instead of a string and a
 * call (3× faster on a 900-character payload).
 */
const ASCII_FIRST = Uint8Array.from(ASCII, (fold) => fold.charCodeAt(0) || 0);
const ASCII_SECOND = Uint8Array.from(ASCII, (fold) => fold.charCodeAt(1) || 0);

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
    const unit = text.charCodeAt(i);
    if (unit < 0x80 && !startsSpecial(unit, options.tagsAsSeparators === true)) {
      const first = ASCII_FIRST[unit] as number;
      if (first !== 0) {
        out.pushCode(first, i, i + 1);
        const second = ASCII_SECOND[unit] as number;
        if (second !== 0) out.pushCode(second, i, i + 1);
      }
      i++;
      continue;
    }
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

/** An ASCII character that may start a reference, an escape or (when read as separators) a tag. */
function startsSpecial(code: number, tagsAsSeparators: boolean): boolean {
  return (
    code === AMPERSAND || code === BACKSLASH || code === PERCENT || (code === LESS_THAN && tagsAsSeparators)
  );
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

/**
 * Appends folded characters and their source spans. The spans are plain arrays
 * and the characters go to one buffer shared by every call (the text is copied
 * out as a string): allocating three typed arrays per call cost more than
 * building a 900-character skeleton.
 */
class Builder {
  private static scratch = new Uint8Array(4096);
  private chars = Builder.scratch;
  private readonly start: number[] = [];
  private readonly end: number[] = [];
  private length = 0;

  constructor(capacity: number) {
    if (Builder.scratch.length < capacity + 16) Builder.scratch = new Uint8Array(capacity + 16);
    this.chars = Builder.scratch;
  }

  push(folded: string, from: number, to: number): void {
    for (let k = 0; k < folded.length; k++) this.pushCode(folded.charCodeAt(k), from, to);
  }

  pushCode(char: number, from: number, to: number): void {
    // Consecutive breaks are one break: widen the previous one instead.
    if (char === OTHER_CODE && this.length > 0 && this.chars[this.length - 1] === OTHER_CODE) {
      this.end[this.length - 1] = to;
      return;
    }
    if (this.length === this.chars.length) this.grow();
    this.chars[this.length] = char;
    this.start.push(from);
    this.end.push(to);
    this.length++;
  }

  finish(): Skeleton {
    return {
      text: Buffer.from(this.chars.buffer, this.chars.byteOffset, this.length).toString('latin1'),
      start: this.start,
      end: this.end,
    };
  }

  /** A fold longer than its source (`m` reads `rn`) can outgrow the text's length. */
  private grow(): void {
    const chars = new Uint8Array(this.chars.length * 2);
    chars.set(this.chars);
    this.chars = chars;
    Builder.scratch = chars;
  }
}
