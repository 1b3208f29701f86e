/**
 * Finds marker look-alikes in a text (the rules are in neutralise.ts, at
 * `neutraliseMarkers`), working on the text's skeleton (skeleton.ts) and
 * answering with spans of the original text.
 *
 * The marker names are found with a bit-parallel matcher (Shift-And): one
 * pass, a few bit operations per skeleton character, so a 4 MiB body costs
 * the same however hostile. It also handles the one ambiguity of the
 * skeleton: a symbol that reads as a letter (`|` as l) may be that letter or a
 * separator, in the same look-alike (`EXTERNA|| UNTRUSTED`).
 *
 * Every step is a loop over the skeleton or over the spans found, none inside
 * another, and each yields every `STEP` units of work, so the whole search can
 * run in slices between which the event loop runs (util/work-slices.ts;
 * docs/untrusted-content.md, "Cost"). Spans are kept in flat typed arrays
 * (span-list.ts), and one skeleton is alive at a time.
 */
import type { Work } from '../util/work-slices.js';
import { readSkeleton, releaseSkeleton, type Skeleton } from './skeleton.js';
import { SpanList } from './span-list.js';

/** The marker names as the skeleton spells them. */
const END_NAME = 'endexternaluntrustedcontent';
const START_NAME = 'externaluntrustedcontent';
const WORDS = ['end', 'external', 'untrusted', 'content'];
/** Adjacent words that make a bracketed shortened marker, as pairs of indexes in WORDS. */
const PAIRS = new Set(
  ['end external', 'end untrusted', 'external untrusted', 'untrusted content', 'external content'].map(
    (pair) => pairKey(...(pair.split(' ').map((word) => WORDS.indexOf(word)) as [number, number])),
  ),
);
function pairKey(first: number, second: number): number {
  return first * WORDS.length + second;
}
/** The one spelling of the start marker's name that is left alone: prose. */
const PROSE = /^external\s+untrusted\s+content$/i;
/** HTML tags inside prose (`external <b>untrusted</b> content`) do not count for the prose rule. */
const TAGS = /<[^<>]*>/g;

/** Units of work (skeleton characters read, spans mapped) between two yields of the search. */
const STEP = 16_384;

/** The look-alikes in `text` as [start, end) spans of it, in order, not overlapping. */
export function* lookalikesOf(text: string): Work<SpanList> {
  const { names, shortened, skeleton } = yield* defaultReading(text);
  if (!skeleton.hasTags) {
    releaseSkeleton(skeleton);
    return yield* inSteps(new Union([names, shortened]));
  }
  const tagged = yield* taggedReading(text, skeleton);
  return yield* inSteps(new Union([names, shortened, tagged]));
}

/** Marker names and shortened markers, on the text's skeleton (returned for the second reading to reuse). */
function* defaultReading(text: string): Work<{ names: SpanList; shortened: SpanList; skeleton: Skeleton }> {
  const skeleton = yield* readSkeleton(text);
  const names = yield* inSteps(new NameSearch(text, skeleton));
  const shortened = yield* inSteps(new ShortenedSearch(skeleton));
  return {
    names: yield* inSteps(new InOriginal(skeleton, names)),
    shortened: yield* inSteps(new InOriginal(skeleton, shortened)),
    skeleton,
  };
}

/**
 * HTML between the letters (`<b>END</b>_<i>EXTERNAL</i>`): a second reading
 * with tags as separators, in the arrays of the first one.
 */
function* taggedReading(text: string, first: Skeleton): Work<SpanList> {
  const skeleton = yield* readSkeleton(text, { tagsAsSeparators: true, reuse: first });
  const found = yield* inSteps(new InOriginal(skeleton, yield* inSteps(new NameSearch(text, skeleton))));
  releaseSkeleton(skeleton);
  return found;
}

/**
 * One loop of the search, run a budget of work at a time. The loops are
 * ordinary methods, not generators: V8 does not optimise a long loop inside a
 * generator while it runs (no on-stack replacement there).
 */
interface Step {
  /** Does up to about `budget` units of work; true when the loop is over. */
  run(budget: number): boolean;
  readonly result: SpanList;
}

function* inSteps(step: Step): Work<SpanList> {
  while (!step.run(STEP)) yield;
  return step.result;
}

/** Sorted span lists merged into one, overlapping and touching spans joined. */
class Union implements Step {
  readonly result = new SpanList();
  private readonly next: number[];

  constructor(private readonly lists: readonly SpanList[]) {
    this.next = lists.map(() => 0);
  }

  run(budget: number): boolean {
    for (let work = 0; work < budget; work++) {
      let pick = -1;
      let pickFrom = 0;
      for (let k = 0; k < this.lists.length; k++) {
        const list = this.lists[k] as SpanList;
        const at = this.next[k] as number;
        if (at < list.length && (pick === -1 || list.from(at) < pickFrom)) {
          pick = k;
          pickFrom = list.from(at);
        }
      }
      if (pick === -1) return true;
      const at = this.next[pick] as number;
      this.result.add(pickFrom, (this.lists[pick] as SpanList).to(at));
      this.next[pick] = at + 1;
    }
    return false;
  }
}

/** Skeleton spans, widened over their brackets, as spans of the original text. */
class InOriginal implements Step {
  readonly result = new SpanList();
  private i = 0;

  constructor(
    private readonly skeleton: Skeleton,
    private readonly spans: SpanList,
  ) {}

  run(budget: number): boolean {
    const { chars, length, start, end } = this.skeleton;
    let work = 0;
    for (; this.i < this.spans.length && work < budget; this.i++) {
      let from = this.spans.from(this.i);
      let to = this.spans.to(this.i);
      const [spanFrom, spanTo] = [from, to];
      while (from > 0 && chars[from - 1] === LT) from--;
      while (to < length && chars[to] === GT) to++;
      this.result.push(start[from] as number, end[to - 1] as number);
      work += 1 + (spanFrom - from) + (to - spanTo);
    }
    return this.i === this.spans.length;
  }
}

/** Every marker name in the skeleton, as [from, to) of skeleton positions. */
class NameSearch implements Step {
  readonly result = new SpanList();
  private i = 0;
  private state = 0;
  private searchedTo = 0;

  constructor(
    private readonly text: string,
    private readonly skeleton: Skeleton,
  ) {}

  run(budget: number): boolean {
    const { chars, length } = this.skeleton;
    const table = maskFor(START_NAME, false);
    const done = 1 << (START_NAME.length - 1);
    let state = this.state;
    let work = 0;
    let i = this.i;
    for (; i < length && work < budget; i++, work++) {
      const code = chars[i] as number;
      if (isBracket(code)) continue;
      const next = ((state << 1) | 1) & (table[code] ?? 0);
      // A symbol that reads as a letter may also be a separator: keep the states it would skip.
      state = isSymbolLetter(code) ? state | next : next;
      if ((state & done) === 0) continue;
      // A start name ends here: non-overlapping matches, so the search starts over after it.
      state = 0;
      work += this.nameEndingAt(i + 1);
    }
    this.i = i;
    this.state = state;
    return i === length;
  }

  /** Records the look-alike whose start name ends at `to`; returns the work it took. */
  private nameEndingAt(to: number): number {
    const { chars, start, end } = this.skeleton;
    const from = matchStart(chars, to, START_NAME, this.searchedTo);
    if (from === -1) return 0; // cannot happen: the forward match started after searchedTo
    const endFrom = matchStart(chars, to, END_NAME, this.searchedTo);
    // The backward searches read at most back to searchedTo; the prose rule reads the original span.
    const work = to - this.searchedTo + (end[to - 1] as number) - (start[from] as number);
    this.searchedTo = to;
    if (endFrom !== -1 && !gluedToWord(this.skeleton, endFrom)) {
      this.result.push(endFrom, to);
      return work;
    }
    // The start name in prose stays; so does "send external untrusted content", whose END is another word's tail.
    if (!isProse(this.text, this.skeleton, from, to)) this.result.push(endFrom === -1 ? from : endFrom, to);
    return work;
  }
}

function isProse(text: string, skeleton: Skeleton, from: number, to: number): boolean {
  if (from > 0 && skeleton.chars[from - 1] === LT) return false;
  const words = text.slice(skeleton.start[from] as number, skeleton.end[to - 1] as number).replace(TAGS, '');
  return PROSE.test(words) && !isCapitals(words);
}

/** Whether the skeleton character at `at` directly follows a letter in the original: part of a longer word. */
function gluedToWord({ chars, start, end }: Skeleton, at: number): boolean {
  return at > 0 && !isBracket(chars[at - 1] as number) && end[at - 1] === start[at];
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

/**
 * Where the shortest match of `name` ending at `to` starts (searching back no
 * further than `limit`), or -1 when none ends there.
 */
function matchStart(chars: Uint8Array, to: number, name: string, limit: number): number {
  const table = maskFor(name, true);
  const done = 1 << (name.length - 1);
  let state = 0;
  for (let i = to - 1; i >= limit; i--) {
    const code = chars[i] as number;
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
class ShortenedSearch implements Step {
  readonly result = new SpanList();
  private at = 0;

  constructor(private readonly skeleton: Skeleton) {}

  run(budget: number): boolean {
    const { chars, length } = this.skeleton;
    let at = this.at;
    let work = 0;
    while (at + 1 < length && work < budget) {
      work++;
      if (chars[at] !== LT || chars[at + 1] !== LT) {
        at++;
        continue;
      }
      let next = at;
      while (next < length && chars[next] === LT) next++;
      let end = next;
      let previous = -1;
      let paired = false;
      for (;;) {
        while (next < length && isSymbolLetter(chars[next] as number)) next++; // symbols between words are separators
        const word = wordAt(chars, length, next);
        if (word === -1) break;
        if (previous !== -1 && PAIRS.has(pairKey(previous, word))) paired = true;
        previous = word;
        next += (WORDS[word] as string).length;
        end = next;
      }
      if (paired) this.result.push(at, end);
      work += next - at;
      at = Math.max(end, at + 2);
    }
    this.at = at;
    return at + 1 >= length;
  }
}

/** The index in WORDS of the word spelt at `at` (in either case), or -1. */
function wordAt(chars: Uint8Array, length: number, at: number): number {
  for (let w = 0; w < WORDS.length; w++) {
    const word = WORDS[w] as string;
    if (at + word.length > length) continue;
    let k = 0;
    // `| 0x20` lowers A–Z and leaves the skeleton's other characters (`<`, `>`, `#`) as they are.
    while (k < word.length && ((chars[at + k] as number) | 0x20) === word.charCodeAt(k)) k++;
    if (k === word.length) return w;
  }
  return -1;
}

function isCapitals(text: string): boolean {
  return text === text.toUpperCase();
}
