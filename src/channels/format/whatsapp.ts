/**
 * WhatsApp's formatting (its "Format text" help): *bold*, _italic_,
 * ~strikethrough~, `inline code`, ```monospace blocks```, `> ` quotes, `- `/`1. `
 * lists. It has no link syntax (links show as "text (url)") and no escape: a
 * literal `*` stays a literal unless it pairs up, as in the app itself.
 */

import { writeDelimited } from './delimited.js';
import { linkSuffix } from './inline.js';
import type { OutboundPart } from './part.js';
import type { Block } from './tree.js';

export function writeWhatsApp(blocks: Block[]): OutboundPart {
  return {
    text: writeDelimited(blocks, {
      markers: { bold: '*', italic: '_', strike: '~' },
      escape: (text) => text,
      code: (text) => `\`${text}\``,
      link: (href, inner, runs) => `${inner}${linkSuffix(href, runs)}`,
      codeBlock: (block) => `\`\`\`\n${block.code}\n\`\`\``,
    }).text,
  };
}
