/**
 * How one character reads to the marker detector (see safety.ts): as Latin
 * letters, as angle brackets, as "some other letter or digit", or as nothing
 * (a separator). The fold is a Unicode confusable skeleton (UTS #39), made
 * case-insensitive and coarse on purpose: it only has to answer "could this
 * spell END_EXTERNAL_UNTRUSTED_CONTENT?".
 *
 * Sources, all Unicode data, no hand-made table:
 * 1. NFKD (compatibility decomposition: full-width, mathematical, circled and
 *    ligature forms become plain letters) with combining marks dropped.
 * 2. Unicode's confusables.txt (UTS #39, via the `unhomoglyph` package):
 *    Cyrillic, Greek, Coptic, Cherokee, Canadian syllabics, Lisu ... look-alikes.
 *    Tried on the character and on its upper and lower case, since the
 *    mapping is case-sensitive (Coptic capital KHI is listed, its small form not).
 * 3. Character names (`unicode-name`), for what confusables.txt leaves out:
 *    Latin small capitals and letters with a stroke or hook ("LATIN LETTER
 *    SMALL CAPITAL A", "LATIN CAPITAL LETTER D WITH STROKE") read as their
 *    letter; angle brackets and quotation marks ("LEFT-POINTING DOUBLE ANGLE
 *    QUOTATION MARK", "MUCH LESS-THAN") read as `<` or `>`.
 */
import { createRequire } from 'node:module';

/**
 * What a character folds to: `a`–`z` (reads as that Latin letter), `A`–`Z`
 * (a punctuation mark or symbol that reads as that letter — `|` as l, `×` as
 * x — so it may be the letter or a separator), `<`, `>`, `#` (another letter
 * or digit), or '' (a separator).
 */
export type Folded = string;

/** Stands for a letter or digit that is not one of the Latin letters: it breaks a word. */
export const OTHER = '#';

const require = createRequire(import.meta.url);
/** UTS #39 confusables.txt (Unicode 13.0.0, says unhomoglyph's CHANGELOG) as a map from a character to its prototype. */
const CONFUSABLES: Record<string, string> = require('unhomoglyph/data.json');

type NameOf = (char: string) => string | undefined;
let nameOf: NameOf | undefined;
/**
 * The names table is large (about 80 ms to load), and only characters outside
 * NFKD and confusables.txt need it: load it on the first such character, not at start-up.
 */
function characterName(char: string): string | undefined {
  nameOf ??= (require('unicode-name') as { unicodeName: NameOf }).unicodeName;
  return nameOf(char);
}

const MARKS = /\p{M}/gu;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const LATIN_LETTER = /\p{Script=Latin}/u;
const PUNCTUATION_OR_SYMBOL = /[\p{P}\p{S}]/u;

/**
 * Letters that confusables.txt gives the same prototype as a punctuation mark
 * or space: `ー`, `一`, `ㅡ` look like a dash (`—` has prototype `ー`).
 */
const PUNCTUATION_PROTOTYPES = new Set(
  Object.entries(CONFUSABLES)
    .filter(([source, target]) => /^[\p{P}\p{Zs}]$/u.test(source) && /^\p{L}+$/u.test(target))
    .filter(([, target]) => !/[a-z]/i.test(target)) // `|` as l is a letter look-alike, handled apart
    .map(([, target]) => target),
);
/** Modifier letters (`ـ`, `ˉ`, `ー`) and letters that look like punctuation: they separate, they do not spell. */
const readsAsPunctuation = (char: string) =>
  MODIFIER_LETTER.test(char) ||
  PUNCTUATION_PROTOTYPES.has(char) ||
  PUNCTUATION_PROTOTYPES.has(CONFUSABLES[char] ?? '');
const MODIFIER_LETTER = /\p{Lm}/u;

/** Folds text that is already a skeleton (ASCII and the like): case, brackets, other letters, separators. */
function classify(text: string): Folded {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if ((code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a)) out += char.toLowerCase();
    else if (char === '<' || char === '>') out += char;
    else if (LETTER_OR_DIGIT.test(char) && !readsAsPunctuation(char)) out += OTHER;
  }
  return out;
}

const decompose = (text: string) => text.normalize('NFKD').replace(MARKS, '');

/** One character's prototype from confusables.txt, decomposed and classified; undefined if it has none. */
function prototype(char: string): Folded | undefined {
  const target = CONFUSABLES[char];
  return target === undefined ? undefined : classify(decompose(target));
}

/** "LATIN LETTER SMALL CAPITAL A", "LATIN CAPITAL LETTER D WITH STROKE", "NEGATIVE SQUARED LATIN CAPITAL LETTER E". */
const NAMED_LETTER =
  /(?:^|\s)(?:LATIN (?:CAPITAL |SMALL )?LETTER (?:SMALL CAPITAL )?|REGIONAL INDICATOR SYMBOL LETTER )([A-Z])(?: WITH .+)?$/;
const LEFT_BRACKET = /LESS-THAN|\bLEFT\b.*\b(?:ANGLE|BINDING) (?:BRACKET|QUOTATION)/;
const RIGHT_BRACKET = /GREATER-THAN|\bRIGHT\b.*\b(?:ANGLE|BINDING) (?:BRACKET|QUOTATION)/;

/** What a character's name says it looks like, for the two families above; undefined if nothing. */
function byName(char: string): Folded | undefined {
  const latin = LATIN_LETTER.test(char);
  if (!latin && !PUNCTUATION_OR_SYMBOL.test(char)) return undefined;
  const name = characterName(char);
  if (name === undefined) return undefined;
  const letter = NAMED_LETTER.exec(name)?.[1];
  if (letter !== undefined) return letter.toLowerCase();
  if (latin) return undefined;
  const bracket = LEFT_BRACKET.test(name) ? '<' : RIGHT_BRACKET.test(name) ? '>' : undefined;
  if (bracket === undefined) return undefined;
  const times = /\bVERY MUCH\b|\bTRIPLE\b/.test(name) ? 3 : /\bMUCH\b|\bDOUBLE\b/.test(name) ? 2 : 1;
  return bracket.repeat(times);
}

/** The character's (or its other case's) confusables.txt prototype, when that reads as Latin letters or brackets. */
function lookalike(char: string): Folded | undefined {
  for (const candidate of [char, char.toUpperCase(), char.toLowerCase()]) {
    const folded = prototype(candidate);
    if (folded !== undefined && folded !== '' && !folded.includes(OTHER)) return folded;
  }
  return undefined;
}

/** A single character that NFKD has already decomposed. */
function foldDecomposed(char: string): Folded {
  if (char.length === 1 && char.charCodeAt(0) < 0x80) {
    // ASCII look-alikes count (`0` O, `1` `I` `|` l, `m` rn); `%` as "o/0" would only break words.
    const folded = prototype(char);
    return folded !== undefined && !folded.includes(OTHER) ? folded : classify(char);
  }
  const folded = lookalike(char);
  if (folded !== undefined) return folded;
  const plain = classify(char);
  if (plain !== '' && plain !== OTHER) return plain;
  return byName(char) ?? prototype(char) ?? plain;
}

const cache = new Map<number, Folded>();

/**
 * How one code point reads to the detector. Cached: a text repeats few
 * distinct characters, so a 4 MB body costs one lookup per character.
 */
export function foldCodePoint(code: number): Folded {
  let folded = cache.get(code);
  if (folded === undefined) {
    const char = String.fromCodePoint(code);
    // confusables.txt first: NFKD would turn lunate sigma `Ϲ` (reads C) into `Σ` (reads nothing).
    folded = code < 0x80 ? undefined : lookalike(char);
    if (folded === undefined) {
      folded = '';
      for (const part of decompose(char)) folded += foldDecomposed(part);
    }
    // A run of other letters is one break; a long Arabic ligature need not be eighteen.
    folded = folded.replace(/#+/g, OTHER);
    if (PUNCTUATION_OR_SYMBOL.test(char)) {
      // A dash is a separator even where confusables.txt likens it to a letter of another script (`—` to `一`);
      // one that reads as a Latin letter (`|`) is marked as such, since it may also be a separator.
      folded = folded.replaceAll(OTHER, '');
      if (/^[a-z]+$/.test(folded)) folded = folded.toUpperCase();
    }
    cache.set(code, folded);
  }
  return folded;
}
