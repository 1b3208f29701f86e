/**
 * Slack's mrkdwn ("Formatting text for app surfaces"): *bold*, _italic_,
 * ~strike~, `code`, ```blocks```, `<url|text>` links, `> ` quotes; `&`, `<` and
 * `>` escaped everywhere else (so a reply's `<!channel>` shows, never pings).
 * Headings are bold: mrkdwn has none.
 */

import { writeDelimited } from './delimited.js';
import { plainText } from './inline.js';
import type { OutboundPart } from './part.js';
import type { Block } from './tree.js';

export const slackEscape = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function writeSlack(blocks: Block[]): OutboundPart {
  return {
    text: writeDelimited(blocks, {
      markers: { bold: '*', italic: '_', strike: '~' },
      escape: slackEscape,
      code: (text) => `\`${slackEscape(text)}\``,
      link(href, _inner, runs) {
        // The link's text is shown as written: mrkdwn does not style inside `<url|text>`.
        const url = slackEscape(href).replace(/\|/g, '%7C');
        const text = plainText(runs).trim();
        return text === '' || text === href ? `<${url}>` : `<${url}|${slackEscape(text)}>`;
      },
      codeBlock: (block) => `\`\`\`\n${slackEscape(block.code)}\n\`\`\``,
    }).text,
  };
}
