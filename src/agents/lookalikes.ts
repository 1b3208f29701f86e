/**
 * Finds marker look-alikes in a text (the rules are in safety.ts, at
 * `neutraliseMarkers`), working on the text's skeleton (skeleton.ts) and
 * answering with spans of the original text.
 *
 * The marker names are found with a bit-parallel matcher (Shift-And): one
 * pass, a few bit operations per skeleton character, so a 4 MiB body costs
 * the same however hostile. It also handles the one ambiguity of the
 * skeleton: a symbol that reads as a letter (`|` as l) may be that letter or a
 * separator, in the same look-alike (`EXTERNA|| UNTRUSTED`).
 */
import { type Skeleton, skeletonOf } from './skeleton.js';

/** The marker names as the skeleton spells them. */
const END_NAME = 'endexternaluntrustedcontent';
const START_NAME = 'externaluntrustedcontent';
const WORDS = ['end', 'external', 'untrusted', 'content'];
/** Adjacent words that make a bracketed shortened marker. */
const PAIRS = new Set([
  'end external',
  'end untrusted',
  'external untrusted',
  'untrusted content',
  'external content',
]);
/** The one spelling of the start marker's name that is left alone: prose. */
const PROSE = /^external\s+untrusted\s+content$/i;
/** HTML tags inside prose (`external <b>untrusted</b> content`) do not count for the prose rule. */
const TAGS = /<[^<>]*>/g;

/** The look-alikes in `text` as [start, end) spans of it, in order, not overlapping. */
export function findLookalikes(text: string): Array<[number, number]> {
  const plain = skeletonOf(text);
  const spans = inOriginal(plain, [...markerNames(text, plain), ...shortenedMarkers(plain.text)]);
  // HTML between the letters (`<b>END</b>_<i>EXTERNAL</i>`): a second reading with tags as separators.
  if (HTML_TAG.test(text)) {
    const untagged = skeletonOf(text, { tagsAsSeparators: true });
    spans.push(...inOriginal(untagged, markerNames(text, untagged)));
  }
  spans.sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [from, to] of spans) {
    const last = merged[merged.length - 1];
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}

const HTML_TAG = /<\/?[A-Za-z]|<!--/;

/** Skeleton spans, widened over their brackets, as spans of the original text. */
function inOriginal(skeleton: Skeleton, spans: Array<[number, number]>): Array<[number, number]> {
  return spans.map(([from, to]) => {
    const [start, end] = widenOverBrackets(skeleton.text, from, to);
    return [skeleton.start[start] as number, skeleton.end[end - 1] as number];
  });
}

/** Every marker name in the skeleton, as [from, to) of skeleton positions. */
function markerNames(text: string, skeleton: Skeleton): Array<[number, number]> {
  const s = skeleton.text;
  const original = (from: number, to: number) =>
    text.slice(skeleton.start[from] as number, skeleton.end[to - 1] as number);
  const isProse = (from: number, to: number) => {
    const words = original(from, to).replace(TAGS, '');
    return s[from - 1] !== '<' && PROSE.test(words) && !isCapitals(words);
  };
  /** Whether the skeleton character at `at` directly follows a letter in the original: part of a longer word. */
  const gluedToWord = (at: number) =>
    at > 0 && isWordCharacter(s[at - 1]) && skeleton.end[at - 1] === skeleton.start[at];
  const found: Array<[number, number]> = [];
  let searchedTo = 0;
  for (const to of matchEnds(s, START_NAME)) {
    const from = matchStart(s, to, START_NAME, searchedTo);
    if (from === -1) continue; // cannot happen: the forward match started after searchedTo
    const endFrom = matchStart(s, to, END_NAME, searchedTo);
    searchedTo = to;
    if (endFrom !== -1 && !gluedToWord(endFrom)) {
      found.push([endFrom, to]);
      continue;
    }
    // The start name in prose stays; so does "send external untrusted content", whose END is another word's tail.
    if (isProse(from, to)) continue;
    const start = endFrom === -1 ? from : endFrom;
    found.push([start, to]);
  }
  return found;
}

/** Per skeleton character, the positions of `name` it can stand for (bit i: name[i]). */
function masks(name: string): Uint32Array {
  const table = new Uint32Array(128);
  for (let i = 0; i < name.length; i++) {
    const letter = name.charCodeAt(i);
    table[letter] = (table[letter] as number) | (1 << i);
    table[letter - 0x20] = (table[letter - 0x20] as number) | (1 << i); // its symbol look-alike
  }
  return table;
}

const isSymbolLetter = (code: number) => code >= 0x41 && code <= 0x5a;

const FORWARD = new Map<string, Uint32Array>();
const BACKWARD = new Map<string, Uint32Array>();
function maskFor(name: string, reversed: boolean): Uint32Array {
  const cache = reversed ? BACKWARD : FORWARD;
  let table = cache.get(name);
  if (!table) {
    table = masks(reversed ? [...name].reverse().join('') : name);
    cache.set(name, table);
  }
  return table;
}

/** Brackets stay in the skeleton for the bracket rules; inside a name they are separators (`EXTERNAL_\n> UNTRUSTED`). */
const isBracket = (code: number) => code === LT || code === GT;
const LT = 0x3c;
const GT = 0x3e;

/** End positions (exclusive) of non-overlapping matches of `name` in `s`, left to right. */
function matchEnds(s: string, name: string): number[] {
  const table = maskFor(name, false);
  const done = 1 << (name.length - 1);
  const ends: number[] = [];
  let state = 0;
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    if (isBracket(code)) continue;
    const next = ((state << 1) | 1) & (table[code] ?? 0);
    // A symbol that reads as a letter may also be a separator: keep the states it would skip.
    state = isSymbolLetter(code) ? state | next : next;
    if (state & done) {
      ends.push(i + 1);
      state = 0;
    }
  }
  return ends;
}

/**
 * Where the shortest match of `name` ending at `to` starts (searching back no
 * further than `limit`), or -1 when none ends there.
 */
function matchStart(s: string, to: number, name: string, limit: number): number {
  const table = maskFor(name, true);
  const done = 1 << (name.length - 1);
  let state = 0;
  for (let i = to - 1; i >= limit; i--) {
    const code = s.charCodeAt(i);
    if (isBracket(code)) continue;
    // Anchored at `to`: a match may only begin at the last character.
    const next = ((state << 1) | (i === to - 1 ? 1 : 0)) & (table[code] ?? 0);
    state = isSymbolLetter(code) && i !== to - 1 ? state | next : next;
    if (state & done) return i;
    if (state === 0) return -1;
  }
  return -1;
}

/** `<<` look-alikes followed by marker words with a pair among them, as [from, to) of skeleton positions. */
function shortenedMarkers(s: string): Array<[number, number]> {
  const found: Array<[number, number]> = [];
  const lower = s.toLowerCase();
  let at = s.indexOf('<<');
  while (at !== -1) {
    let next = at;
    while (s[next] === '<') next++;
    const words: string[] = [];
    let end = next;
    for (;;) {
      while (isSymbolLetter(s.charCodeAt(next))) next++; // symbols between words are separators
      const word = WORDS.find((candidate) => lower.startsWith(candidate, next));
      if (word === undefined) break;
      words.push(word);
      next += word.length;
      end = next;
    }
    if (words.some((word, i) => i > 0 && PAIRS.has(`${words[i - 1]} ${word}`))) found.push([at, end]);
    at = s.indexOf('<<', Math.max(end, at + 2));
  }
  return found;
}

/** Includes the `<` look-alikes right before a look-alike and the `>` ones right after it. */
function widenOverBrackets(s: string, from: number, to: number): [number, number] {
  let start = from;
  while (start > 0 && s[start - 1] === '<') start--;
  let end = to;
  while (end < s.length && s[end] === '>') end++;
  return [start, end];
}

/** A letter or digit of any kind (the skeleton's other characters are brackets). */
function isWordCharacter(char: string | undefined): boolean {
  return char !== undefined && char !== '<' && char !== '>';
}

function isCapitals(text: string): boolean {
  return text === text.toUpperCase();
}
