/**
 * The marker neutraliser of the safety boundary (safety.ts): invisible
 * characters out, every marker look-alike replaced. One pass, written as a
 * `Work` (util/work-slices.ts) that yields every few thousand characters, so
 * that a long text can be neutralised in slices (boundary-passes.ts;
 * docs/untrusted-content.md, "Cost").
 */
import { runToEnd, type Work } from '../util/work-slices.js';
import { lookalikesOf } from './lookalikes.js';
import type { SpanList } from './span-list.js';

/** What a marker look-alike in the content is replaced with. Holds no marker word and no `<`. */
export const MARKER_REMOVED = '[[marker removed]]';

/**
 * Removes invisible characters and replaces every marker look-alike with
 * `MARKER_REMOVED`; everything else passes unchanged (no normalisation of the
 * text itself, so CJK, Arabic, Cyrillic, code and HTML stay as they were).
 *
 * 1. Invisible characters are removed from the text: every Default_Ignorable
 *    code point (zero-width space/joiners, soft hyphen, word joiner, BOM, bidi
 *    controls, variation selectors, Unicode tag characters, Hangul fillers,
 *    U+180E) and the interlinear annotation controls. U+2028/U+2029 become
 *    "\n"; lone surrogates become U+FFFD. Cost: emoji ZWJ sequences fall apart
 *    into their parts and Persian ZWNJ is lost — accepted, since these
 *    characters also carry hidden text.
 * 2. Detection runs on the text's confusable skeleton (skeleton.ts,
 *    confusables.ts): NFKD, Unicode's UTS #39 confusables, character names for
 *    small capitals and angle brackets, HTML character references and
 *    one-character escapes (`\u005F`, `%5F`) decoded, case ignored, and every
 *    separator (spaces, line breaks, dots, underscores, hyphens, any punctuation
 *    or symbol, modifier letters and letters that look like dashes) left out;
 *    a symbol that reads as a letter (`|` as l) counts as either, and so do
 *    HTML tags between letters (lookalikes.ts).
 * 3. A look-alike is
 *    - the letters of a marker name, END EXTERNAL UNTRUSTED CONTENT or
 *      EXTERNAL UNTRUSTED CONTENT, however they are spelt, split or encoded;
 *      except prose: "external untrusted content" as three plain words
 *      separated by white space, not all in capitals and with no `<` before
 *      it, stays (it cannot pass for a marker name); or
 *    - two or more `<` look-alikes followed by marker words of which two follow
 *      each other as in the markers (END EXTERNAL, END UNTRUSTED, EXTERNAL
 *      UNTRUSTED, UNTRUSTED CONTENT, EXTERNAL CONTENT): a shortened marker
 *      such as `<<<END_UNTRUSTED>>>`. A shift like `cout << untrustedInput` stays.
 *    Angle-bracket look-alikes right before or after it belong to it. The
 *    original characters of the look-alike, from its first bracket to its last
 *    letter or bracket, are replaced; attributes after it (` id="…">>>`) stay.
 *
 * The result contains no look-alike (running it again changes nothing).
 */
export function neutraliseMarkers(content: string): string {
  return runToEnd(neutralising(content));
}

/** `neutraliseMarkers` as a pass that yields every few thousand characters (util/work-slices.ts). */
export function* neutralising(content: string): Work<string> {
  const text = yield* withoutInvisibles(content);
  return yield* replaced(text, yield* lookalikesOf(text));
}

/** Code units cleaned of invisible characters between two yields. */
const CHUNK = 65_536;

/**
 * Step 1 of the rules, a chunk at a time. Each replacement looks at one code
 * point (a surrogate pair at most), so chunks that never split a pair give the
 * text the whole-text replacements would.
 */
function* withoutInvisibles(content: string): Work<string> {
  if (content.length <= CHUNK) return clean(content);
  const parts: string[] = [];
  let changed = false;
  for (let at = 0; at < content.length; ) {
    let to = Math.min(content.length, at + CHUNK);
    if (to < content.length && isHighSurrogate(content.charCodeAt(to - 1))) to--;
    const part = content.slice(at, to);
    const cleaned = clean(part);
    changed ||= cleaned !== part;
    parts.push(cleaned);
    at = to;
    yield;
  }
  return changed ? parts.join('') : content;
}

/**
 * Lone surrogates first: removing an invisible between two halves would otherwise join
 * them into a new (possibly invisible) character after the removal pass.
 */
function clean(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD').replace(LINE_SEPARATORS, '\n').replace(INVISIBLE, '');
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;

/** Spans replaced between two yields (each join copies their text once). */
const SPANS_PER_JOIN = 4096;

/**
 * `text` with every span replaced by MARKER_REMOVED, joined a few thousand
 * spans at a time. The joined parts are concatenated, not joined again: the
 * result is a rope that whoever reads it whole (the provider's request body)
 * flattens once, instead of one more copy of the whole text here, in one
 * piece on the event loop (30 ms for 10 MiB on the loaded 2-core machine).
 */
function* replaced(text: string, spans: SpanList): Work<string> {
  if (spans.length === 0) return text;
  let out = '';
  for (let first = 0; first < spans.length; first += SPANS_PER_JOIN) {
    out += withRemoved(text, spans, first, Math.min(spans.length, first + SPANS_PER_JOIN));
    yield;
  }
  return out + text.slice(spans.to(spans.length - 1));
}

/** The text before each of the spans `first` to `last - 1` (after the one before it), each followed by MARKER_REMOVED. */
function withRemoved(text: string, spans: SpanList, first: number, last: number): string {
  const pieces: string[] = [];
  let copied = first === 0 ? 0 : spans.to(first - 1);
  for (let i = first; i < last; i++) {
    pieces.push(text.slice(copied, spans.from(i)), MARKER_REMOVED);
    copied = spans.to(i);
  }
  return pieces.join('');
}

const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\uFFF9-\uFFFB]/gu;
const LINE_SEPARATORS = /[\u2028\u2029]/g;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
