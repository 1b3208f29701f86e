/**
 * Signal's text styles: the message is plain text and the formatting travels
 * beside it as ranges (BOLD, ITALIC, STRIKETHROUGH, MONOSPACE over UTF-16
 * offsets, as Signal's BodyRange counts), which signal-cli takes as
 * `textStyle: ["start:length:STYLE", ...]`. Links show as "text (url)"; headings
 * are bold; code blocks monospace.
 */

import { bold, byLink, linkSuffix } from './inline.js';
import { layout } from './lines.js';
import type { OutboundPart, TextStyle } from './part.js';
import type { Block, Marks } from './tree.js';

export function writeSignal(blocks: Block[]): OutboundPart {
  const out = layout(blocks, (block, builder) => {
    builder.append(block.prefix);
    if (block.kind === 'code') {
      builder.append(block.code, ['MONOSPACE']);
      return;
    }
    for (const group of byLink(block.heading > 0 ? bold(block.runs) : block.runs)) {
      for (const run of group.runs) builder.append(run.text, styles(run.marks));
      if (group.link !== undefined) builder.append(linkSuffix(group.link, group.runs));
    }
  });
  return out.styles.length > 0 ? { text: out.text, styles: out.styles } : { text: out.text };
}

function styles(marks: Marks): TextStyle['style'][] {
  const list: TextStyle['style'][] = [];
  if (marks.bold) list.push('BOLD');
  if (marks.italic) list.push('ITALIC');
  if (marks.strike) list.push('STRIKETHROUGH');
  if (marks.code) list.push('MONOSPACE');
  return list;
}
