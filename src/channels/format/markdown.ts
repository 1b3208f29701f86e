/**
 * Markdown as Discord, Mattermost and Teams render it: **bold**, *italic*,
 * ~~strike~~, `code`, fenced blocks with their language, [text](url), `> `
 * quotes, lists, `#` headings up to the depth the platform shows (deeper ones
 * bold). Literal text is backslash-escaped, so a reply's stray `*` or `_` shows
 * as written. Tables, which Discord does not render, arrive as code blocks.
 */

import { longestRun, writeDelimited } from './delimited.js';
import type { OutboundPart } from './part.js';
import type { Block } from './tree.js';

export function markdownWriter(options: { headingLevels: number }): (blocks: Block[]) => OutboundPart {
  return (blocks) => ({
    text: writeDelimited(blocks, {
      markers: { bold: '**', italic: '*', strike: '~~' },
      escape: escapeMarkdown,
      code(text) {
        const fence = '`'.repeat(longestRun(text, '`') + 1);
        const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
        return `${fence}${pad}${text}${pad}${fence}`;
      },
      link: (href, inner, runs) =>
        runs.map((run) => run.text).join('') === href
          ? href
          : `[${inner}](${href.replace(/[()\s<>]/g, (c) => encodeURIComponent(c))})`,
      codeBlock(block) {
        const fence = '`'.repeat(Math.max(3, longestRun(block.code, '`') + 1));
        return `${fence}${block.lang.replace(/[^\w+#.-]/g, '')}\n${block.code}\n${fence}`;
      },
      prefix: (prefix) => prefix.replace(/• $/, '- '),
      heading: (level) => (level <= options.headingLevels ? `${'#'.repeat(level)} ` : undefined),
    }).text,
  });
}

/** Markdown's punctuation escaped where it could start formatting. */
export function escapeMarkdown(text: string, lineStart: boolean): string {
  const escaped = text.replace(/[\\`*_~[\]|<>]/g, '\\$&');
  if (!lineStart) return escaped;
  // Block syntax only counts at the start of a line: headings, list items, numbered items.
  return escaped.replace(/^(\s*)([#+-])/, '$1\\$2').replace(/^(\s*\d+)([.)])/, '$1\\$2');
}
