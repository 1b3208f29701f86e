/**
 * What the Telegram fake does with `parse_mode: "HTML"`: parses the markup as
 * the Bot API does ("Formatting options", HTML style) into the visible text and
 * its entities, or refuses it with the API's own words, answered as
 * `400 Bad Request: can't parse entities: <reason>`.
 *
 * Checked: only the supported tags (b strong i em u ins s strike del span
 * class="tg-spoiler" tg-spoiler a href code pre blockquote tg-emoji); every
 * tag closed, in order; nothing inside <code>/<pre> except <code> directly in
 * <pre>; no link inside a link, no blockquote inside a blockquote; `<` and `>`
 * only as tags (a literal one must be &lt;/&gt;); entities &lt; &gt; &amp;
 * &quot; and numeric ones. Offsets are UTF-16 units, as Telegram counts.
 */

export interface TelegramEntity {
  type: string;
  offset: number;
  length: number;
  url?: string;
  language?: string;
}

export type ParsedHtml =
  | { ok: true; text: string; entities: TelegramEntity[] }
  | { ok: false; reason: string };

const TYPES: Record<string, string> = {
  b: 'bold',
  strong: 'bold',
  i: 'italic',
  em: 'italic',
  u: 'underline',
  ins: 'underline',
  s: 'strikethrough',
  strike: 'strikethrough',
  del: 'strikethrough',
  'tg-spoiler': 'spoiler',
  span: 'spoiler',
  a: 'text_link',
  code: 'code',
  pre: 'pre',
  blockquote: 'blockquote',
  'tg-emoji': 'custom_emoji',
};
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"' };

interface Open {
  tag: string;
  start: number;
  attrs: Record<string, string>;
}

export function parseTelegramHtml(html: string): ParsedHtml {
  let text = '';
  const entities: TelegramEntity[] = [];
  const stack: Open[] = [];
  const byteOffset = (index: number) => Buffer.byteLength(html.slice(0, index));
  let i = 0;
  while (i < html.length) {
    const c = html[i] as string;
    if (c === '&') {
      const entity = /^&(#x[0-9a-f]+|#\d+|[a-z]+);/i.exec(html.slice(i));
      const name = entity?.[1];
      if (entity && name !== undefined) {
        if (name.startsWith('#')) {
          const code =
            name[1]?.toLowerCase() === 'x' ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
          text += String.fromCodePoint(code);
          i += entity[0].length;
          continue;
        }
        const named = NAMED[name.toLowerCase()];
        if (named !== undefined) {
          text += named;
          i += entity[0].length;
          continue;
        }
      }
      // Telegram keeps an '&' that starts no entity it knows as text.
      text += c;
      i++;
      continue;
    }
    if (c === '>') return { ok: false, reason: `Unexpected end of tag at byte offset ${byteOffset(i)}` };
    if (c !== '<') {
      text += c;
      i++;
      continue;
    }
    const end = html.indexOf('>', i);
    if (end < 0) return { ok: false, reason: `Unclosed start tag at byte offset ${byteOffset(i)}` };
    const inside = html.slice(i + 1, end);
    if (inside.startsWith('/')) {
      const name = inside.slice(1).trim().toLowerCase();
      const open = stack.pop();
      if (!open) return { ok: false, reason: `Unexpected end tag at byte offset ${byteOffset(i)}` };
      if (name !== '' && name !== open.tag) {
        return {
          ok: false,
          reason: `Unmatched end tag at byte offset ${byteOffset(i)}, expected "</${open.tag}>", found "</${name}>"`,
        };
      }
      const length = text.length - open.start;
      if (length > 0) entities.push(entityOf(open, length, stack));
      i = end + 1;
      continue;
    }
    const match = /^([a-z-]+)((?:\s+[a-z-]+\s*=\s*"[^"]*")*)\s*$/i.exec(inside);
    const tag = match?.[1]?.toLowerCase();
    if (!match || tag === undefined || !(tag in TYPES)) {
      return {
        ok: false,
        reason: `Unsupported start tag "${inside.split(/\s/)[0]}" at byte offset ${byteOffset(i)}`,
      };
    }
    const attrs: Record<string, string> = {};
    for (const attr of (match[2] ?? '').matchAll(/([a-z-]+)\s*=\s*"([^"]*)"/gi)) {
      attrs[(attr[1] as string).toLowerCase()] = decode(attr[2] as string);
    }
    const parent = stack.at(-1);
    if (parent && (parent.tag === 'code' || (parent.tag === 'pre' && tag !== 'code'))) {
      return {
        ok: false,
        reason: `Can't put "${tag}" inside "${parent.tag}" at byte offset ${byteOffset(i)}`,
      };
    }
    if (parent?.tag === 'pre' && tag === 'code' && stack.filter((o) => o.tag === 'code').length > 0) {
      return { ok: false, reason: `Can't put "code" inside "code" at byte offset ${byteOffset(i)}` };
    }
    if ((tag === 'a' || tag === 'blockquote') && stack.some((open) => open.tag === tag)) {
      return {
        ok: false,
        reason: `Nested "${tag}" entities are not allowed at byte offset ${byteOffset(i)}`,
      };
    }
    if (tag === 'code' && stack.some((open) => open.tag === 'a')) {
      return { ok: false, reason: `Can't put "code" inside "a" at byte offset ${byteOffset(i)}` };
    }
    if (tag === 'a' && !/^(https?|tg|mailto):/i.test(attrs.href ?? '')) {
      return { ok: false, reason: `Wrong HTTP URL at byte offset ${byteOffset(i)}` };
    }
    stack.push({ tag, start: text.length, attrs });
    i = end + 1;
  }
  const unclosed = stack.at(-1);
  if (unclosed)
    return { ok: false, reason: `Can't find end tag corresponding to start tag "${unclosed.tag}"` };
  // A <code> in a <pre> only carries the pre's language.
  const shown = entities.filter((entity) => entity.type !== 'code_in_pre');
  return { ok: true, text, entities: shown.sort((a, b) => a.offset - b.offset) };
}

function entityOf(open: Open, length: number, stack: Open[]): TelegramEntity {
  const type = TYPES[open.tag] as string;
  const entity: TelegramEntity = { type, offset: open.start, length };
  if (type === 'text_link') entity.url = open.attrs.href;
  // <pre><code class="language-x">: the language belongs to the pre entity.
  if (type === 'code' && stack.at(-1)?.tag === 'pre') {
    const language = /^language-(.+)$/.exec(open.attrs.class ?? '')?.[1];
    if (language) (stack.at(-1) as Open).attrs.language = language;
    return { ...entity, type: 'code_in_pre' };
  }
  if (type === 'pre' && open.attrs.language) entity.language = open.attrs.language;
  return entity;
}

function decode(value: string): string {
  return value.replace(/&(lt|gt|amp|quot);/g, (_, name: string) => NAMED[name] as string);
}
