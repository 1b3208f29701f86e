/**
 * An operator notice (an alert: docs/platforms.md, "Operator notices") as the messages that
 * carry it: its text exactly as written, never read as Markdown, split within the platform's
 * limit. `escapeChar` makes each character literal where the platform formats every message
 * (Discord and Mattermost Markdown, Slack's `&`, `<`, `>`); it must work one character at a
 * time, so a cut never falls inside an escape. Each part is marked `notice`, so the platform
 * sends it as plain text without link previews.
 */
import type { OutboundPart } from './part.js';

export function renderNotice(
  text: string,
  limit: number,
  escapeChar: (text: string) => string = (plain) => plain,
): OutboundPart[] {
  const parts: OutboundPart[] = [];
  let rest = text.trim();
  while (rest !== '') {
    const cut = cutIndex(rest, limit, escapeChar);
    parts.push({ text: escapeChar(rest.slice(0, cut).trimEnd()), notice: true });
    rest = rest.slice(cut).trimStart();
  }
  // Nothing but blank space: the text as it is, which the platform refuses as empty.
  return parts.length > 0 ? parts : [{ text, notice: true }];
}

/**
 * Where the first part of `text` ends: as far as fits the limit once escaped, at the last
 * blank space when there is one, never inside a surrogate pair; at least one character.
 */
function cutIndex(text: string, limit: number, escapeChar: (text: string) => string): number {
  let size = 0;
  let index = 0;
  let lastSpace = -1;
  for (const char of text) {
    if (/\s/.test(char)) lastSpace = index;
    size += escapeChar(char).length;
    if (size > limit) break;
    index += char.length;
  }
  if (index >= text.length) return text.length;
  if (lastSpace > 0) return lastSpace;
  if (index > 0) return index;
  // Not even one character fits (a limit below an escape's length): it goes alone.
  return String.fromCodePoint(text.codePointAt(0) ?? 0x20).length;
}
