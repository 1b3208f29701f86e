/**
 * Styled runs as a well-nested token stream: marks open and close like a stack
 * (bold outside italic outside strikethrough), so a run changing marks closes
 * only what it must. Writers for delimiter syntaxes (Slack, WhatsApp, Markdown)
 * also get the spans cleaned up the way those syntaxes need: no span starting
 * or ending with whitespace, none crossing a line break, none empty.
 */
import type { Marks, Run } from './tree.js';

export type Mark = 'bold' | 'italic' | 'strike';
const ORDER: readonly Mark[] = ['bold', 'italic', 'strike'];

export type Token =
  | { type: 'open'; mark: Mark }
  | { type: 'close'; mark: Mark }
  | { type: 'text'; text: string }
  /** Inline code, written as one piece. */
  | { type: 'code'; text: string };

/** The tokens of runs that share one link target (or none). */
export function tokens(runs: Run[], options: { delimiters: boolean }): Token[] {
  const out: Token[] = [];
  const stack: Mark[] = [];
  const pieces = options.delimiters ? runs.flatMap(splitLines) : runs;
  for (const run of pieces) {
    const want = ORDER.filter((mark) => run.marks[mark]);
    let keep = 0;
    while (keep < stack.length && want.includes(stack[keep] as Mark)) keep++;
    while (stack.length > keep) out.push({ type: 'close', mark: stack.pop() as Mark });
    for (const mark of want) {
      if (stack.includes(mark)) continue;
      stack.push(mark);
      out.push({ type: 'open', mark });
    }
    out.push(run.marks.code ? { type: 'code', text: run.text } : { type: 'text', text: run.text });
  }
  while (stack.length > 0) out.push({ type: 'close', mark: stack.pop() as Mark });
  return options.delimiters ? tidy(out) : out;
}

/** A line break never sits inside a span: delimiter syntaxes do not carry a span across lines. */
function splitLines(run: Run): Run[] {
  if (run.marks.code || !run.text.includes('\n')) return [run];
  return run.text
    .split(/(\n)/)
    .filter((piece) => piece !== '')
    .map((piece) => (piece === '\n' ? { text: piece, marks: {} } : { text: piece, marks: run.marks }));
}

/** Moves whitespace out of spans and drops empty spans, until nothing changes. */
function tidy(input: Token[]): Token[] {
  let out = input;
  for (let changed = true; changed; ) {
    changed = false;
    const next: Token[] = [];
    for (const token of out) {
      const prev = next.at(-1);
      if (token.type === 'text' && token.text === '') continue;
      if (token.type === 'close' && prev?.type === 'open' && prev.mark === token.mark) {
        next.pop();
        changed = true;
        continue;
      }
      if (token.type === 'text' && prev?.type === 'open') {
        const lead = /^\s+/.exec(token.text)?.[0];
        if (lead) {
          next.splice(next.length - 1, 0, { type: 'text', text: lead });
          next.push({ type: 'text', text: token.text.slice(lead.length) });
          changed = true;
          continue;
        }
      }
      if (token.type === 'close' && prev?.type === 'text') {
        const trail = /\s+$/.exec(prev.text)?.[0];
        if (trail) {
          next[next.length - 1] = { type: 'text', text: prev.text.slice(0, -trail.length) };
          next.push(token, { type: 'text', text: trail });
          changed = true;
          continue;
        }
      }
      next.push(token);
    }
    out = next;
  }
  return out;
}

/** Consecutive runs grouped by link target, in order. */
export function byLink(runs: Run[]): { link?: string; runs: Run[] }[] {
  const groups: { link?: string; runs: Run[] }[] = [];
  for (const run of runs) {
    const last = groups.at(-1);
    if (last && last.link === run.marks.link) last.runs.push(run);
    else groups.push(run.marks.link === undefined ? { runs: [run] } : { link: run.marks.link, runs: [run] });
  }
  return groups;
}

/** The text of runs, marks dropped. */
export const plainText = (runs: Run[]) => runs.map((run) => run.text).join('');

/** Runs with every run made bold (headings, where a platform has no headings). */
export const bold = (runs: Run[]): Run[] =>
  runs.map((run) => ({ ...run, marks: { ...run.marks, bold: true } }));

/** A link's text as platforms without links show it: the text, then the target unless they are the same. */
export function linkSuffix(link: string, runs: Run[]): string {
  const text = plainText(runs).trim();
  const target = link.replace(/^mailto:/, '');
  // A bare URL or address (`www.x.com` linked as http://www.x.com) already shows its target.
  const bare = link.replace(/^(https?:\/\/|mailto:)/, '');
  return text === link || text === target || text === bare ? '' : ` (${target})`;
}

export type { Marks };
