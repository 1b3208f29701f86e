/**
 * Telegram's HTML parse mode (Bot API "Formatting options"): <b>, <i>, <s>,
 * <code>, <pre><code class="language-…">, <a href>, <blockquote>, with `&`, `<`
 * and `>` escaped as &amp; &lt; &gt; (and `"` in attributes). Telegram lets
 * bold, italic and strikethrough nest, but nothing inside <code> or <pre>, and
 * no code inside a link: such code is written without its code style. Each
 * part carries its plain-text twin, sent instead if Telegram refuses the markup,
 * and measured against the limit: Telegram counts the text after parsing,
 * which is never longer than the twin.
 */

import { bold, byLink, linkSuffix, type Mark, tokens } from './inline.js';
import type { OutboundPart } from './part.js';
import { writePlain } from './plain.js';
import type { Block, Run } from './tree.js';

const TAG: Record<Mark, string> = { bold: 'b', italic: 'i', strike: 's' };

export const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function writeTelegram(blocks: Block[]): OutboundPart {
  let html = '';
  let quoted = false;
  blocks.forEach((block, i) => {
    const quote = block.quote > 0;
    if (quoted && !quote) html += '</blockquote>';
    if (i > 0) html += block.gap === 'line' ? '\n' : '\n\n';
    if (quote && !quoted) html += '<blockquote>';
    quoted = quote;
    html += escapeHtml(block.prefix);
    if (block.kind === 'code') {
      const lang = block.lang.replace(/[^\w+#-]/g, '');
      html += lang
        ? `<pre><code class="language-${lang}">${escapeHtml(block.code)}</code></pre>`
        : `<pre>${escapeHtml(block.code)}</pre>`;
      return;
    }
    html += inline(block.heading > 0 ? bold(block.runs) : block.runs);
  });
  if (quoted) html += '</blockquote>';
  return { text: html, plain: writePlain(blocks).text };
}

function inline(runs: Run[]): string {
  let html = '';
  for (const group of byLink(runs)) {
    const linkable = group.link !== undefined && /^(https?|tg):/i.test(group.link);
    // Code takes no other style inside it, and no link takes code.
    const parts = group.runs.map((run) =>
      !run.marks.code
        ? run
        : linkable
          ? { ...run, marks: { ...run.marks, code: undefined } }
          : { ...run, marks: { code: true as const } },
    );
    const inner = tokens(parts, { delimiters: false })
      .map((token) => {
        if (token.type === 'open') return `<${TAG[token.mark]}>`;
        if (token.type === 'close') return `</${TAG[token.mark]}>`;
        if (token.type === 'code') return `<code>${escapeHtml(token.text)}</code>`;
        return escapeHtml(token.text);
      })
      .join('');
    if (linkable)
      html += `<a href="${escapeHtml(group.link as string).replace(/"/g, '&quot;')}">${inner}</a>`;
    else
      html += group.link === undefined ? inner : `${inner}${escapeHtml(linkSuffix(group.link, group.runs))}`;
  }
  return html;
}
