/**
 * A reply's Markdown, parsed once (CommonMark + GFM, by mdast-util-from-markdown)
 * and flattened into the few things chat platforms can show: blocks of styled
 * text runs, and code blocks. Each platform's writer (../format/*.ts) turns
 * these blocks into its own formatting; the splitter cuts between and inside
 * them, so a part never ends inside a span, a tag or a code block.
 */
import type { Nodes, Parents, PhrasingContent, Root, RootContent, Table } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';

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

interface Context {
  quote: number;
  indent: string;
  gap: Gap;
  definitions: Map<string, string>;
}

/** The blocks of a Markdown text, in order. */
export function parseMarkdown(markdown: string): Block[] {
  const root: Root = fromMarkdown(markdown, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
  const definitions = new Map<string, string>();
  collectDefinitions(root, definitions);
  const blocks: Block[] = [];
  children(root.children, { quote: 0, indent: '', gap: 'para', definitions }, blocks);
  return blocks;
}

function collectDefinitions(node: Nodes, into: Map<string, string>): void {
  if (node.type === 'definition') into.set(node.identifier, node.url);
  if ('children' in node) for (const child of (node as Parents).children) collectDefinitions(child, into);
}

/** Appends the blocks of sibling nodes; the first takes the context's gap, the rest their own. */
function children(nodes: RootContent[], ctx: Context, out: Block[], firstPrefix?: string): Block[] {
  let first = true;
  for (const node of nodes) {
    const before = out.length;
    block(node, { ...ctx, gap: first ? ctx.gap : 'para' }, out, first ? firstPrefix : undefined);
    if (out.length > before) first = false;
  }
  return out;
}

/** Appends the blocks of one node; answers `out`. */
function block(node: RootContent, ctx: Context, out: Block[], prefix?: string): Block[] {
  const base = { gap: ctx.gap, quote: ctx.quote, prefix: prefix ?? ctx.indent };
  switch (node.type) {
    case 'paragraph':
      return pushText(out, { ...base, kind: 'text', heading: 0, runs: inline(node.children, {}, ctx) });
    case 'heading':
      return pushText(out, {
        ...base,
        kind: 'text',
        heading: node.depth,
        runs: inline(node.children, {}, ctx),
      });
    case 'code':
      out.push({ ...base, kind: 'code', lang: node.lang ?? '', code: node.value });
      return out;
    case 'html':
      return pushText(out, { ...base, kind: 'text', heading: 0, runs: [{ text: node.value, marks: {} }] });
    case 'thematicBreak':
      return pushText(out, { ...base, kind: 'text', heading: 0, runs: [{ text: '———', marks: {} }] });
    case 'blockquote':
      return children(node.children, { ...ctx, quote: ctx.quote + 1 }, out, prefix);
    case 'list': {
      let number = node.start ?? 1;
      let first = true;
      for (const item of node.children) {
        const marker = node.ordered ? `${number++}. ` : '• ';
        const check = item.checked === true ? '☑ ' : item.checked === false ? '☐ ' : '';
        const itemPrefix = `${first && prefix !== undefined ? prefix : ctx.indent}${marker}${check}`;
        // A tight list's items are on consecutive lines; a loose list's are paragraphs.
        const gap: Gap = first ? ctx.gap : node.spread || item.spread ? 'para' : 'line';
        const inner = { ...ctx, indent: `${ctx.indent}${' '.repeat(marker.length)}`, gap };
        const before = out.length;
        children(item.children, inner, out, itemPrefix);
        // Blocks after an item's first are on their own lines in a tight list.
        if (!(node.spread || item.spread)) for (const b of out.slice(before + 1)) b.gap = 'line';
        if (out.length === before)
          pushText(out, { ...base, gap, kind: 'text', heading: 0, prefix: itemPrefix, runs: [] });
        first = false;
      }
      return out;
    }
    case 'table':
      out.push({ ...base, kind: 'code', lang: '', code: tableText(node, ctx) });
      return out;
    case 'footnoteDefinition':
      return children(
        node.children,
        ctx,
        out,
        `${prefix ?? ctx.indent}[^${node.label ?? node.identifier}]: `,
      );
    default:
      // definition, yaml and anything a newer parser adds: nothing to show.
      return out;
  }
}

/** Keeps a text block unless it has nothing but whitespace and no prefix to show. */
function pushText(out: Block[], block: TextBlock): Block[] {
  const runs = trimRuns(block.runs);
  if (runs.length === 0 && block.prefix.trim() === '') return out;
  out.push({ ...block, runs });
  return out;
}

function inline(nodes: PhrasingContent[], marks: Marks, ctx: Context): Run[] {
  return nodes.flatMap((node): Run[] => {
    switch (node.type) {
      case 'text':
        return [{ text: node.value, marks }];
      case 'strong':
        return inline(node.children, { ...marks, bold: true }, ctx);
      case 'emphasis':
        return inline(node.children, { ...marks, italic: true }, ctx);
      case 'delete':
        return inline(node.children, { ...marks, strike: true }, ctx);
      case 'inlineCode':
        return [{ text: node.value, marks: { ...marks, code: true } }];
      case 'break':
        return [{ text: '\n', marks: {} }];
      case 'link':
        return linked(inline(node.children, { ...marks, link: node.url }, ctx), node.url, marks);
      case 'linkReference': {
        const url = ctx.definitions.get(node.identifier);
        const inner = inline(node.children, url ? { ...marks, link: url } : marks, ctx);
        return url ? linked(inner, url, marks) : inner;
      }
      case 'image':
        return [{ text: node.alt || node.url, marks: { ...marks, link: node.url } }];
      case 'imageReference': {
        const url = ctx.definitions.get(node.identifier);
        return [{ text: node.alt ?? '', marks: url ? { ...marks, link: url } : marks }];
      }
      case 'html':
        return [{ text: node.value, marks }];
      case 'footnoteReference':
        return [{ text: `[^${node.label ?? node.identifier}]`, marks }];
      default:
        return [];
    }
  });
}

/** A link with no text shows its target. */
function linked(runs: Run[], url: string, marks: Marks): Run[] {
  return runs.some((run) => run.text !== '') ? runs : [{ text: url, marks: { ...marks, link: url } }];
}

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

/** A GFM table as aligned plain-text columns (shown as a code block: chat platforms have no tables). */
function tableText(table: Table, ctx: Context): string {
  const rows = table.children.map((row) =>
    row.children.map((cell) =>
      inline(cell.children, {}, ctx)
        .map((run) => run.text)
        .join('')
        .replace(/\s+/g, ' ')
        .trim(),
    ),
  );
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
