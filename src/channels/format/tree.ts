/**
 * A reply's Markdown, parsed once (CommonMark with GitHub's strikethrough,
 * tables and bare-URL links, by markdown-it) and flattened into the few things
 * chat platforms can show: blocks of styled text runs, and code blocks. Each
 * platform's writer (../format/*.ts) turns these blocks into its own
 * formatting; the splitter cuts between and inside them, so a part never ends
 * inside a span, a tag or a code block.
 *
 * markdown-it rather than the mdast/micromark family: both are CommonMark
 * exact and well kept, but replies are rendered on the gateway's event loop for
 * every delivery, and markdown-it parsed our 40 KB test replies 5–20 times
 * faster (measured side by side on this machine).
 */
import { createRequire } from 'node:module';
import type MarkdownIt from 'markdown-it';
import type Token from 'markdown-it/lib/token.mjs';

export interface Marks {
  bold?: true;
  italic?: true;
  strike?: true;
  /** Inline code: shown as written, no other mark inside. */
  code?: true;
  /** The link target, for text inside a link. */
  link?: string;
}

export interface Run {
  text: string;
  marks: Marks;
}

/** What separates a block from the one before it in the same message. */
export type Gap = 'line' | 'para';

interface BlockBase {
  gap: Gap;
  /** Blockquote depth (0: not quoted). */
  quote: number;
  /** Written before the block's first line: a list bullet or number, with its indentation. */
  prefix: string;
}

export interface TextBlock extends BlockBase {
  kind: 'text';
  runs: Run[];
  /** Heading level 1–6, 0 for ordinary text. */
  heading: number;
}

export interface CodeBlock extends BlockBase {
  kind: 'code';
  lang: string;
  code: string;
}

export type Block = TextBlock | CodeBlock;

let parser: MarkdownIt | undefined;

/**
 * The parser, made on the first reply a platform formats: markdown-it loads then, not at start
 * (docs/performance.md, "Start-up and idle memory"); a gateway without platforms never loads it.
 * Required, not imported, so that parsing stays synchronous: `require` gives markdown-it's own
 * CommonJS build of the same release, one file instead of its ~50 modules.
 */
function markdownParser(): MarkdownIt {
  if (parser === undefined) {
    const Parser = createRequire(import.meta.url)('markdown-it') as typeof MarkdownIt;
    // Raw HTML stays text (html: false): a reply's `<b>` is shown, never interpreted.
    parser = new Parser('default', { html: false, linkify: true, typographer: false });
  }
  return parser;
}

type Frame =
  | { kind: 'quote' }
  | { kind: 'list'; ordered: boolean; next: number; tight: boolean; items: number }
  | { kind: 'item'; marker: string; used: boolean; blocks: number; list: ListFrame };
type ListFrame = Extract<Frame, { kind: 'list' }>;
type ItemFrame = Extract<Frame, { kind: 'item' }>;

/** The blocks of a Markdown text, in order. */
export function parseMarkdown(markdown: string): Block[] {
  const tokens = markdownParser().parse(markdown, {});
  const blocks = new BlockBuilder();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    if (!blocks.structure(token, tokens, i)) blocks.content(token);
  }
  return blocks.out;
}

/** The blocks made so far, and the quotes, lists, heading and table open at this point. */
class BlockBuilder {
  readonly out: Block[] = [];
  private readonly frames: Frame[] = [];
  private heading = 0;
  private table: string[][] | undefined;

  /** Opens or closes a quote, a list, an item, a heading or a table; false for any other token. */
  structure(token: Token, tokens: Token[], index: number): boolean {
    switch (token.type) {
      case 'blockquote_open':
        this.frames.push({ kind: 'quote' });
        return true;
      case 'bullet_list_open':
      case 'ordered_list_open':
        this.frames.push({
          kind: 'list',
          ordered: token.type === 'ordered_list_open',
          next: Number(token.attrGet('start') ?? 1),
          tight: isTight(tokens, index),
          items: 0,
        });
        return true;
      case 'list_item_open':
        this.openItem();
        return true;
      case 'blockquote_close':
      case 'bullet_list_close':
      case 'ordered_list_close':
      case 'list_item_close':
        this.close();
        return true;
      case 'heading_open':
        this.heading = Number(token.tag.slice(1));
        return true;
      case 'heading_close':
        this.heading = 0;
        return true;
      case 'table_open':
        this.table = [];
        return true;
      case 'tr_open':
        this.table?.push([]);
        return true;
      case 'table_close':
        this.emit({ kind: 'code', lang: '', code: tableText(this.table ?? []) });
        this.table = undefined;
        return true;
      default:
        return false;
    }
  }

  /** A leaf: text, code, a rule, raw HTML, or a table cell's text. */
  content(token: Token): void {
    switch (token.type) {
      case 'inline':
        if (this.table) (this.table.at(-1) as string[]).push(plainOf(inline(token.children ?? [])));
        else this.emit({ kind: 'text', heading: this.heading, runs: trimRuns(inline(token.children ?? [])) });
        break;
      case 'fence':
        this.emit({
          kind: 'code',
          lang: token.info.trim().split(/\s+/)[0] ?? '',
          code: token.content.replace(/\n$/, ''),
        });
        break;
      case 'code_block':
        this.emit({ kind: 'code', lang: '', code: token.content.replace(/\n$/, '') });
        break;
      case 'hr':
        this.emit({ kind: 'text', heading: 0, runs: [{ text: '———', marks: {} }] });
        break;
      case 'html_block':
        this.emit({ kind: 'text', heading: 0, runs: trimRuns([{ text: token.content, marks: {} }]) });
        break;
      default:
        // paragraph_open/close, thead/tbody, th/td: their content is the inline token.
        break;
    }
  }

  private openItem(): void {
    const list = this.frames.findLast((frame): frame is ListFrame => frame.kind === 'list') as ListFrame;
    list.items++;
    const marker = list.ordered ? `${list.next++}. ` : '• ';
    this.frames.push({ kind: 'item', marker, used: false, blocks: 0, list });
  }

  private close(): void {
    const frame = this.frames.pop();
    // An item with nothing in it still shows its marker.
    if (frame?.kind === 'item' && !frame.used) {
      this.frames.push(frame);
      this.emit({ kind: 'text', heading: 0, runs: [{ text: '', marks: {} }] });
      this.frames.pop();
    }
  }

  /** Adds a leaf block where the open quotes and list items put it. */
  private emit(block: Omit<TextBlock, keyof BlockBase> | Omit<CodeBlock, keyof BlockBase>): void {
    if (block.kind === 'text' && block.runs.length === 0) return;
    const items = this.frames.filter((frame): frame is ItemFrame => frame.kind === 'item');
    const gap = gapBefore(items);
    // Each item not yet shown writes its marker; shown ones indent by its width.
    const prefix = items
      .map((frame) => (frame.used ? ' '.repeat(frame.marker.length) : frame.marker))
      .join('');
    for (const frame of items) {
      frame.used = true;
      frame.blocks++;
    }
    const quote = this.frames.filter((frame) => frame.kind === 'quote').length;
    this.out.push({ ...block, gap: this.out.length === 0 ? 'para' : gap, quote, prefix } as Block);
  }
}

/** The gap before a block inside the open list items `items` (innermost last). */
function gapBefore(items: ItemFrame[]): Gap {
  const item = items.at(-1);
  if (!item) return 'para';
  if (item.blocks > 0 || item.list.items > 1) return item.list.tight ? 'line' : 'para';
  // A list's first item: on the next line when it follows its parent item's text in a tight list.
  const parent = items.at(-2);
  return parent && parent.blocks > 0 && parent.list.tight ? 'line' : 'para';
}

/** Whether a list's paragraphs are hidden (a tight list: items on consecutive lines). */
function isTight(tokens: Token[], open: number): boolean {
  const level = (tokens[open] as Token).level;
  for (let i = open + 1; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    if (token.level === level && token.type.endsWith('_list_close')) return true;
    if (token.type === 'paragraph_open' && token.level === level + 2) return token.hidden;
  }
  return true;
}

function inline(tokens: Token[]): Run[] {
  const runs: Run[] = [];
  let bold = 0;
  let italic = 0;
  let strike = 0;
  const links: string[] = [];
  const marks = (): Marks => ({
    ...(bold > 0 ? { bold: true } : {}),
    ...(italic > 0 ? { italic: true } : {}),
    ...(strike > 0 ? { strike: true } : {}),
    ...(links.length > 0 ? { link: links.at(-1) as string } : {}),
  });
  let linkStart = 0;
  for (const token of tokens) {
    switch (token.type) {
      case 'strong_open':
        bold++;
        break;
      case 'strong_close':
        bold--;
        break;
      case 'em_open':
        italic++;
        break;
      case 'em_close':
        italic--;
        break;
      case 's_open':
        strike++;
        break;
      case 's_close':
        strike--;
        break;
      case 'link_open':
        links.push(token.attrGet('href') ?? '');
        linkStart = runs.length;
        break;
      case 'link_close': {
        const href = links.pop() ?? '';
        // A link with no text shows its target.
        if (!runs.slice(linkStart).some((run) => run.text !== ''))
          runs.push({ text: href, marks: { ...marks(), link: href } });
        break;
      }
      case 'code_inline':
        runs.push({ text: token.content, marks: { ...marks(), code: true } });
        break;
      case 'softbreak':
      case 'hardbreak':
        runs.push({ text: '\n', marks: {} });
        break;
      case 'image': {
        const src = token.attrGet('src') ?? '';
        runs.push({ text: token.content || src, marks: { ...marks(), link: src } });
        break;
      }
      default:
        if (token.content !== '') runs.push({ text: token.content, marks: marks() });
    }
  }
  return runs;
}

const plainOf = (runs: Run[]) =>
  runs
    .map((run) => run.text)
    .join('')
    .replace(/\s+/g, ' ')
    .trim();

/** Runs without leading and trailing whitespace (a paragraph's text as CommonMark shows it). */
export function trimRuns(runs: Run[]): Run[] {
  const out = runs.filter((run) => run.text !== '');
  while (out.length > 0 && !out[0]?.marks.code && (out[0] as Run).text.trim() === '') out.shift();
  while (out.length > 0 && !out.at(-1)?.marks.code && (out.at(-1) as Run).text.trim() === '') out.pop();
  if (out.length === 0) return out;
  const first = out[0] as Run;
  if (!first.marks.code) out[0] = { ...first, text: first.text.trimStart() };
  const last = out.at(-1) as Run;
  if (!last.marks.code) out[out.length - 1] = { ...last, text: last.text.trimEnd() };
  return out;
}

/** A table as aligned plain-text columns (shown as a code block: chat platforms have no tables). */
function tableText(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join(' | ')
      .trimEnd();
  const [head, ...body] = rows;
  if (!head) return '';
  return [line(head), widths.map((w) => '-'.repeat(Math.max(w, 1))).join('-|-'), ...body.map(line)].join(
    '\n',
  );
}
