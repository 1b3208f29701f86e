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

export function splitBlocks(blocks: Block[], fits: Fits): Block[][] {
  const units = blocks.flatMap((block) => (fits([block]) ? [block] : cut(block, fits)));
  return pack(units, (slice) => slice, fits);
}

/**
 * Greedy packing: from each start, the longest run of items whose build fits
 * (found by doubling, then bisection: a few writes per message, not one per item).
 */
function pack<T>(items: T[], build: (slice: T[], first: boolean) => Block[], fits: Fits): Block[][] {
  const out: Block[][] = [];
  let first = true;
  for (let start = 0; start < items.length; ) {
    const ok = (count: number) => fits(build(items.slice(start, start + count), first));
    let good = 1;
    let bad = items.length - start + 1;
    for (let probe = 2; probe < bad; probe *= 2) {
      if (ok(probe)) good = probe;
      else {
        bad = probe;
        break;
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

function cut(block: Block, fits: Fits): Block[] {
  return block.kind === 'code' ? cutCode(block, fits) : cutText(block, fits);
}

function cutCode(block: CodeBlock, fits: Fits): Block[] {
  const build = (atoms: string[], first: boolean): CodeBlock => ({
    ...block,
    code: atoms.join('').replace(/\n$/, ''),
    prefix: first ? block.prefix : '',
    gap: 'line',
  });
  const alone = (atom: string) => fits([build([atom], true)]);
  const lines = block.code.split(/(?<=\n)/);
  const atoms = lines.flatMap((line) => (alone(line) ? [line] : Array.from(line)));
  return pack(atoms, (slice, first) => [build(slice, first)], fits).flat();
}

function cutText(block: TextBlock, fits: Fits): Block[] {
  const build = (atoms: Run[][], first: boolean): TextBlock => ({
    ...block,
    runs: trimRuns(atoms.flat()),
    prefix: first ? block.prefix : '',
    gap: 'line',
  });
  const alone = (atom: Run[]) => fits([build([atom], true)]);
  const atoms = splitRuns(block.runs, /(?<=\n)/).flatMap((line) =>
    alone(line)
      ? [line]
      : splitRuns(line, /(?<=\s)/).flatMap((word) => (alone(word) ? [word] : characters(word))),
  );
  return pack(atoms, (slice, first) => [build(slice, first)], fits).flat();
}

/** Runs cut where `at` matches in their text, grouped into pieces (a line, a word). */
function splitRuns(runs: Run[], at: RegExp): Run[][] {
  const pieces: Run[][] = [[]];
  for (const run of runs) {
    const parts = run.marks.code ? [run.text] : run.text.split(at);
    parts.forEach((text, i) => {
      if (i > 0) pieces.push([]);
      if (text !== '') (pieces.at(-1) as Run[]).push({ text, marks: run.marks });
    });
  }
  return pieces.filter((piece) => piece.length > 0);
}

/** One atom per character (code point): the last resort for a word longer than a message. */
function characters(runs: Run[]): Run[][] {
  return runs.flatMap((run) => Array.from(run.text, (char) => [{ text: char, marks: run.marks }]));
}
