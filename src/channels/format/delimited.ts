/**
 * The writer for formatting written into the text with delimiters (`*bold*`,
 * `**bold**`, ```` ``` ````): Slack's mrkdwn, WhatsApp's, Markdown for Discord,
 * Mattermost and Teams, and plain text (no delimiters at all). A syntax says
 * how each thing is written; this module lays the blocks out.
 */

import { bold, byLink, type Mark, type Token, tokens } from './inline.js';
import { type Builder, layout } from './lines.js';
import type { TextStyle } from './part.js';
import type { Block, CodeBlock, Run } from './tree.js';

export interface DelimiterSyntax {
  /** The delimiter opening and closing each mark ('' for none). */
  markers: Record<Mark, string>;
  /** Literal text made safe (`lineStart`: it begins a line, where block syntax lives). */
  escape(text: string, lineStart: boolean): string;
  /** Inline code. */
  code(text: string): string;
  /** A link around its written text; `runs` are the text's runs. */
  link(href: string, inner: string, runs: Run[]): string;
  codeBlock(block: CodeBlock): string;
  /** A heading's marker (`## `), or undefined to show headings bold. */
  heading?(level: number): string | undefined;
  /** A list item's prefix as this syntax writes it (default: as made, `• ` or `1. `). */
  prefix?(prefix: string): string;
}

export function writeDelimited(blocks: Block[], syntax: DelimiterSyntax): Builder {
  return layout(blocks, (block, out) => writeBlock(block, syntax, out));
}

function writeBlock(block: Block, syntax: DelimiterSyntax, out: Builder): void {
  // Prefixes are ours (indentation, bullets, numbers): written, not escaped.
  out.append(syntax.prefix ? syntax.prefix(block.prefix) : block.prefix);
  if (block.kind === 'code') {
    out.append(syntax.codeBlock(block));
    return;
  }
  const marker = block.heading > 0 ? syntax.heading?.(block.heading) : undefined;
  if (marker !== undefined) out.append(marker);
  const runs = block.heading > 0 && marker === undefined ? bold(block.runs) : block.runs;
  let text = '';
  const lineStart = () => (text === '' ? block.prefix === '' && marker === undefined : text.endsWith('\n'));
  for (const group of byLink(runs)) {
    const inner = write(tokens(group.runs, { delimiters: true }), syntax, () =>
      group.link === undefined ? lineStart() : false,
    );
    text += group.link === undefined ? inner : syntax.link(group.link, inner, group.runs);
  }
  out.append(text);
}

function write(list: Token[], syntax: DelimiterSyntax, lineStart: () => boolean): string {
  let text = '';
  for (const token of list) {
    const atStart = text === '' ? lineStart() : text.endsWith('\n');
    if (token.type === 'open' || token.type === 'close') text += syntax.markers[token.mark];
    else if (token.type === 'code') text += syntax.code(token.text);
    else text += syntax.escape(token.text, atStart);
  }
  return text;
}

/** The longest run of `char` in `text` (to pick a fence that the text cannot close). */
export function longestRun(text: string, char: string): number {
  let longest = 0;
  let current = 0;
  for (const c of text) {
    current = c === char ? current + 1 : 0;
    longest = Math.max(longest, current);
  }
  return longest;
}

export type { TextStyle };
