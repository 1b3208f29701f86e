/**
 * An operator notice as the messages that carry it (docs/platforms.md, "Operator notices"): the
 * text as written — never read as Markdown — escaped one character at a time where the platform
 * formats every message, split within the limit as measured after escaping, at a blank space
 * when there is one, never inside a surrogate pair.
 */
import { describe, expect, it } from 'vitest';
import { escapeMarkdown } from '../../src/channels/format/markdown.js';
import { renderNotice } from '../../src/channels/format/notice.js';
import { slackEscape } from '../../src/channels/format/slack.js';

describe('renderNotice', () => {
  it('one part, the text as written, marked as a notice', () => {
    expect(renderNotice('⚠️ **not bold** [not](a link) # no heading', 4096)).toEqual([
      { text: '⚠️ **not bold** [not](a link) # no heading', notice: true },
    ]);
  });

  it('escapes each character for the platform', () => {
    expect(renderNotice('a <b> & *c*', 100, slackEscape)).toEqual([
      { text: 'a &lt;b&gt; &amp; *c*', notice: true },
    ]);
    expect(renderNotice('*a* _b_ `c` [d]', 100, (char) => escapeMarkdown(char, false))).toEqual([
      { text: '\\*a\\* \\_b\\_ \\`c\\` \\[d\\]', notice: true },
    ]);
  });

  it('splits at a blank space within the limit, measured after escaping', () => {
    // 'aaaa <<<<' is 9 characters, 21 once escaped: past the limit of 16.
    const parts = renderNotice('aaaa <<<< bbbb', 16, slackEscape);
    expect(parts.map((part) => part.text)).toEqual(['aaaa', '&lt;&lt;&lt;&lt;', 'bbbb']);
    expect(renderNotice('<<<<', 12, slackEscape).map((part) => part.text)).toEqual(['&lt;&lt;&lt;', '&lt;']);
    expect(renderNotice('one two three', 7).map((part) => part.text)).toEqual(['one two', 'three']);
  });

  it('cuts inside a word only when it must, never inside a surrogate pair', () => {
    expect(renderNotice('abcdefgh', 3).map((part) => part.text)).toEqual(['abc', 'def', 'gh']);
    const emoji = '😀😀😀';
    const parts = renderNotice(emoji, 3).map((part) => part.text);
    expect(parts).toEqual(['😀', '😀', '😀']);
    expect(parts.join('')).toBe(emoji);
  });

  it('blank text stays as it is (the platform refuses it as empty)', () => {
    expect(renderNotice('   ', 10)).toEqual([{ text: '   ', notice: true }]);
  });
});
