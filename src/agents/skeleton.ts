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
 * the length of the text. The pass yields every few thousand characters
 * (`readSkeleton`), so a long text can be read in slices between which the
 * event loop runs (util/work-slices.ts); `skeletonOf` reads it at once.
 */
import { decodeHTML } from 'entities';
import { runToEnd, type Work } from '../util/work-slices.js';
import { foldCodePoint, OTHER } from './confusables.js';

export interface Skeleton {
  /** The folded text, separators left out, as character codes: `chars[0 … length)`. */
  chars: Uint8Array;
  length: number;
  /** For skeleton position i: the original text's [start[i], end[i]) that produced it. */
  start: Int32Array;
  end: Int32Array;
  /**
   * Whether the text opens an HTML tag or comment (`<b`, `</b`, `<!--`), so that
   * the reading with tags as separators is needed too. Set by the default reading only.
   */
  hasTags: boolean;
}

/** Code units of the text read between two yields of the pass. */
const STEP = 16_384;

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

/** The skeleton of `text`, read at once. */
export function skeletonOf(text: string, options: ReadOptions = {}): Skeleton {
  return runToEnd(readSkeleton(text, options));
}

export interface ReadOptions {
  tagsAsSeparators?: boolean;
  /**
   * A skeleton nothing reads any more, whose arrays this reading may take
   * (the second reading of a text takes the first one's): one set of arrays
   * per pass, not two.
   */
  reuse?: Skeleton;
}

/**
 * The skeleton of `text`, read as a pass that yields every `STEP` code units.
 * The loop itself is an ordinary function called once per step: V8 does not
 * optimise a long loop inside a generator while it runs (no on-stack
 * replacement there), which made the pass 2–3× slower.
 */
export function* readSkeleton(text: string, options: ReadOptions = {}): Work<Skeleton> {
  const tags = options.tagsAsSeparators === true;
  const out = new Builder(text.length, options.reuse);
  let i = 0;
  while (i < text.length) {
    i = readStretch(text, i, Math.min(text.length, i + STEP), tags, out);
    if (i < text.length) yield;
  }
  return out.finish();
}

/** Reads the text from `i` until at least `stop` into `out`; returns where it stopped. */
function readStretch(text: string, i: number, stop: number, tags: boolean, out: Builder): number {
  while (i < stop) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) {
      // Runs of plain ASCII go to the table loop; references, escapes and tags one at a time.
      i = startsSpecial(unit, tags) ? readSpecial(text, i, tags, out) : out.readAscii(text, i, stop, tags);
    } else if (unit < 0xd800 || unit > 0xdfff) {
      out.push(foldCodePoint(unit), i, i + 1); // CJK and the like: one cached fold per character
      i++;
    } else {
      i = readSpecial(text, i, tags, out); // a surrogate pair, or a lone half
    }
  }
  return i;
}

/** Folds the character (or tag, reference, escape) at `i` into `out`; returns where the next one starts. */
function readSpecial(text: string, i: number, tags: boolean, out: Builder): number {
  const code = text.codePointAt(i) as number;
  if (code === LESS_THAN && tags) {
    TAG.lastIndex = i;
    if (TAG.test(text)) return TAG.lastIndex;
  }
  if (code === AMPERSAND || code === BACKSLASH || code === PERCENT) {
    const next = code === AMPERSAND ? readReference(text, i, out) : readEscape(text, i, out);
    if (next > i) return next;
  }
  const width = code > 0xffff ? 2 : 1;
  out.push(code < 0x80 ? (ASCII[code] as string) : foldCodePoint(code), i, i + width);
  return i + width;
}

/** Whether the `<` at `at` opens an HTML tag or comment: `<b`, `</b`, `<!--`. */
function opensTag(text: string, at: number): boolean {
  const next = text.charCodeAt(at + 1);
  if (isAsciiLetter(next)) return true;
  if (next === SLASH) return isAsciiLetter(text.charCodeAt(at + 2));
  return next === BANG && text.startsWith('--', at + 2);
}

const isAsciiLetter = (code: number) => (code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a;
const SLASH = 0x2f;
const BANG = 0x21;

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

/** The arrays of a skeleton of up to `SPARE_CAPACITY` characters, kept for the next short text. */
let spare: { chars: Uint8Array; start: Int32Array; end: Int32Array } | undefined;
/**
 * 64 Ki characters (576 KiB of arrays): what a short text needs. Allocating
 * the three arrays cost a third of neutralising a 900-character payload; a
 * longer text's arrays are its own and freed with it, so a large run leaves no
 * memory behind.
 */
const SPARE_CAPACITY = 65_536;

/**
 * Gives a skeleton's arrays back for the next short text, once nothing reads
 * the skeleton any more. Optional: arrays not given back are collected.
 */
export function releaseSkeleton(skeleton: Skeleton): void {
  if (skeleton.chars.length === SPARE_CAPACITY) {
    spare = { chars: skeleton.chars, start: skeleton.start, end: skeleton.end };
  }
}

/**
 * Appends folded characters and their source spans, in typed arrays sized for
 * the text (a fold longer than its source, `m` as `rn`, doubles them): 9 bytes
 * per skeleton character, written in place. Plain arrays grown by `push` cost
 * about 100 ns per character on megabyte texts (their growth copies and the
 * collector), 20× the rest of the pass.
 */
class Builder {
  private chars: Uint8Array;
  private start: Int32Array;
  private end: Int32Array;
  private length = 0;
  /** See `Skeleton.hasTags`. */
  hasTags = false;

  constructor(capacity: number, reuse: Skeleton | undefined) {
    if (reuse && reuse.chars.length >= capacity + 16) {
      this.chars = reuse.chars;
      this.start = reuse.start;
      this.end = reuse.end;
    } else if (capacity + 16 <= SPARE_CAPACITY) {
      // Taken, not shared: a pass that runs in slices never finds another's arrays here.
      const arrays = spare ?? {
        chars: new Uint8Array(SPARE_CAPACITY),
        start: new Int32Array(SPARE_CAPACITY),
        end: new Int32Array(SPARE_CAPACITY),
      };
      spare = undefined;
      this.chars = arrays.chars;
      this.start = arrays.start;
      this.end = arrays.end;
    } else {
      this.chars = new Uint8Array(capacity + 16);
      this.start = new Int32Array(capacity + 16);
      this.end = new Int32Array(capacity + 16);
    }
  }

  push(folded: string, from: number, to: number): void {
    for (let k = 0; k < folded.length; k++) this.pushCode(folded.charCodeAt(k), from, to);
  }

  pushCode(char: number, from: number, to: number): void {
    const length = this.length;
    // Consecutive breaks are one break: widen the previous one instead.
    if (char === OTHER_CODE && length > 0 && this.chars[length - 1] === OTHER_CODE) {
      this.end[length - 1] = to;
      return;
    }
    if (length === this.chars.length) this.grow();
    this.chars[length] = char;
    this.start[length] = from;
    this.end[length] = to;
    this.length = length + 1;
  }

  /**
   * Folds the ASCII characters from `i` on, up to `stop` or the first one that
   * needs more than a table read (one that may start a reference, an escape or
   * a tag, or any non-ASCII character); returns where it stopped. The common
   * case, so it works on locals: each character a table read and three stores.
   */
  readAscii(text: string, i: number, stop: number, tags: boolean): number {
    let { chars, start, end, length } = this;
    for (; i < stop; i++) {
      const unit = text.charCodeAt(i);
      if (unit >= 0x80 || startsSpecial(unit, tags)) break;
      if (unit === LESS_THAN && !this.hasTags) this.hasTags = opensTag(text, i);
      const first = ASCII_FIRST[unit] as number;
      if (first === 0) continue;
      if (length + 2 > chars.length) {
        this.length = length;
        this.grow();
        ({ chars, start, end } = this);
      }
      if (first === OTHER_CODE && length > 0 && chars[length - 1] === OTHER_CODE) {
        end[length - 1] = i + 1; // consecutive breaks are one break (see pushCode)
        continue;
      }
      chars[length] = first;
      start[length] = i;
      end[length] = i + 1;
      length++;
      // Only `m` folds to two characters (`rn`), both letters.
      const second = ASCII_SECOND[unit] as number;
      if (second !== 0) {
        chars[length] = second;
        start[length] = i;
        end[length] = i + 1;
        length++;
      }
    }
    this.length = length;
    return i;
  }

  finish(): Skeleton {
    const { chars, start, end, length, hasTags } = this;
    return { chars, length, start, end, hasTags };
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
