/**
 * Splits a reply's blocks into messages that each fit a platform's limit, as
 * measured on the platform's own formatted output (`fits`). Cuts go between
 * blocks first, then between a block's lines, then between words, and only as
 * a last resort inside a word (never inside a surrogate pair). A block cut in
 * two is written twice by the platform's writer, so each part opens and closes
 * its own spans, tags and code fences: nothing is ever broken mid-markup.
 */
import { type Block, type CodeBlock, type Run, type TextBlock, trimRuns } from './tree.js';

/** Whether these blocks, written as one message, are within the limit. */
export type Fits = (blocks: Block[]) => boolean;
/** What the platform counts of these blocks written as one message. */
export type Measure = (blocks: Block[]) => number;

export function splitBlocks(blocks: Block[], measure: Measure, limit: number): Block[][] {
  const fits: Fits = (list) => measure(list) <= limit;
  const units = blocks.flatMap((block) => (fits([block]) ? [block] : cut(block, measure, limit)));
  // Between blocks: a line break, or a blank line.
  return pack(
    units,
    (slice) => slice,
    measure,
    limit,
    (block) => (block.gap === 'line' ? 1 : 2),
  );
}

/**
 * Greedy packing: from each start, the longest run of items whose build fits.
 * The run is first estimated from each item's own size (written alone, once)
 * and checked by writing it; only when the estimate is off does a search
 * (doubling, then bisection) decide. So a reply costs about two writes of its
 * text, not one per item.
 */
function pack<T>(
  items: T[],
  build: (slice: T[], first: boolean) => Block[],
  measure: Measure,
  limit: number,
  separator: (item: T) => number,
): Block[][] {
  const sizes = items.map((item) => measure(build([item], false)));
  const out: Block[][] = [];
  let first = true;
  for (let start = 0; start < items.length; ) {
    const ok = (count: number) => measure(build(items.slice(start, start + count), first)) <= limit;
    const left = items.length - start;
    let estimate = 0;
    for (let sum = 0; estimate < left; estimate++) {
      sum +=
        (sizes[start + estimate] as number) + (estimate > 0 ? separator(items[start + estimate] as T) : 0);
      if (sum > limit) break;
    }
    // One item always goes, even one too long alone (cut() made that as rare as a character).
    let good = Math.max(1, estimate);
    let bad = good + 1;
    if (good > 1 && !ok(good)) {
      bad = good;
      good = 1;
    } else if (good < left && ok(good + 1)) {
      // Underestimated (markup shared between items): search upwards.
      good += 1;
      bad = left + 1;
      for (let probe = good * 2; probe <= left; probe *= 2) {
        if (!ok(probe)) {
          bad = probe;
          break;
        }
        good = probe;
      }
    }
    while (bad - good > 1) {
      const mid = Math.floor((good + bad) / 2);
      if (ok(mid)) good = mid;
      else bad = mid;
    }
    out.push(build(items.slice(start, start + good), first));
    start += good;
    first = false;
  }
  return out;
}

function cut(block: Block, measure: Measure, limit: number): Block[] {
  return block.kind === 'code' ? cutCode(block, measure, limit) : cutText(block, measure, limit);
}

function cutCode(block: CodeBlock, measure: Measure, limit: number): Block[] {
  const build = (atoms: string[], first: boolean): CodeBlock => ({
    ...block,
    code: atoms.join('').replace(/\n$/, ''),
    prefix: first ? block.prefix : '',
    gap: 'line',
  });
  const alone = (atom: string) => measure([build([atom], true)]) <= limit;
  const lines = block.code.split(/(?<=\n)/);
  const atoms = lines.flatMap((line) => (alone(line) ? [line] : Array.from(line)));
  return pack(
    atoms,
    (slice, first) => [build(slice, first)],
    measure,
    limit,
    () => 0,
  ).flat();
}

function cutText(block: TextBlock, measure: Measure, limit: number): Block[] {
  const build = (atoms: Run[][], first: boolean): TextBlock => ({
    ...block,
    runs: trimRuns(atoms.flat()),
    prefix: first ? block.prefix : '',
    gap: 'line',
  });
  const alone = (atom: Run[]) => measure([build([atom], true)]) <= limit;
  const atoms = splitRuns(block.runs, LINES).flatMap((line) =>
    alone(line)
      ? [line]
      : splitRuns(line, WORDS).flatMap((word) => (alone(word) ? [word] : characters(word))),
  );
  return pack(
    atoms,
    (slice, first) => [build(slice, first)],
    measure,
    limit,
    () => 0,
  ).flat();
}

/** Where pieces may end: after a newline (lines), after any whitespace (words). */
interface Boundary {
  /** Cuts a run's text after each boundary character. */
  split: RegExp;
  /** Whether a text ends on a boundary character. */
  endsOn: RegExp;
}
const LINES: Boundary = { split: /(?<=\n)/, endsOn: /\n$/ };
const WORDS: Boundary = { split: /(?<=\s)/, endsOn: /\s$/ };

/**
 * Runs grouped into pieces (lines, words) that end on a boundary character —
 * inside a run's text and where one run ends on it and the next begins (a
 * space closing a plain run before a link, say). A code span is never cut.
 */
function splitRuns(runs: Run[], boundary: Boundary): Run[][] {
  const pieces: Run[][] = [[]];
  let atBoundary = false;
  for (const run of runs) {
    const parts = run.marks.code ? [run.text] : run.text.split(boundary.split);
    for (const text of parts) {
      if (text === '') continue;
      if (atBoundary) pieces.push([]);
      (pieces.at(-1) as Run[]).push({ text, marks: run.marks });
      atBoundary = boundary.endsOn.test(text);
    }
  }
  return pieces.filter((piece) => piece.length > 0);
}

/** One atom per character (code point): the last resort for a word longer than a message. */
function characters(runs: Run[]): Run[][] {
  return runs.flatMap((run) => Array.from(run.text, (char) => [{ text: char, marks: run.marks }]));
}
