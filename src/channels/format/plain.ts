/**
 * Plain text (iMessage, and Telegram's resend when it refuses the markup):
 * no markers; links as "text (url)", code as written, quotes as `> `.
 */

import { writeDelimited } from './delimited.js';
import { linkSuffix } from './inline.js';
import type { OutboundPart } from './part.js';
import type { Block } from './tree.js';

export function writePlain(blocks: Block[]): OutboundPart {
  return {
    text: writeDelimited(blocks, {
      markers: { bold: '', italic: '', strike: '' },
      escape: (text) => text,
      code: (text) => text,
      link: (href, inner, runs) => `${inner}${linkSuffix(href, runs)}`,
      codeBlock: (block) => block.code,
    }).text,
  };
}
