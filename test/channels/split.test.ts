import { describe, expect, it } from 'vitest';
import { splitMessage } from '../../src/channels/split.js';

const para = (n: number, length: number) => `P${n} ${'x'.repeat(length - 3 - String(n).length)}.`;

describe('splitMessage', () => {
  it('returns short text unchanged', () => {
    expect(splitMessage('hello\n\nworld', 100)).toEqual(['hello\n\nworld']);
  });

  it('splits between paragraphs first, packing as many as fit', () => {
    const text = [para(1, 40), para(2, 40), para(3, 40)].join('\n\n');
    const parts = splitMessage(text, 90);
    expect(parts).toEqual([`${para(1, 40)}\n\n${para(2, 40)}`, para(3, 40)]);
  });

  it('splits a long paragraph between lines, then words, never exceeding the limit', () => {
    const lines = Array.from({ length: 12 }, (_, i) => `line ${i} ${'word '.repeat(6).trim()}`).join('\n');
    const parts = splitMessage(lines, 80);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(80);
    expect(parts.join('\n').replace(/\s+/g, ' ')).toBe(lines.replace(/\s+/g, ' '));
    for (const part of parts) expect(part.startsWith('line ')).toBe(true);

    const sentence = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const words = splitMessage(sentence, 50);
    for (const part of words) expect(part.length).toBeLessThanOrEqual(50);
    expect(words.join(' ')).toBe(sentence);
  });

  it('cuts inside a word only when a word alone exceeds the limit, and never inside a surrogate pair', () => {
    const long = `${'a'.repeat(49)}😀${'b'.repeat(60)}`;
    const parts = splitMessage(long, 50);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(50);
    expect(parts.join('')).toBe(long);
    expect(parts[0]).toBe('a'.repeat(49));
  });

  it('keeps a fenced code block whole when it fits in one message', () => {
    const code = '```js\nconst a = 1;\n\nconst b = 2;\n```';
    const text = `${para(1, 60)}\n\n${code}\n\n${para(2, 60)}`;
    const parts = splitMessage(text, 70);
    expect(parts).toContain(code);
  });

  it('re-fences the pieces of a code block that is longer than a message', () => {
    const body = Array.from({ length: 30 }, (_, i) => `console.log(${i});`).join('\n');
    const text = `intro\n\n\`\`\`js\n${body}\n\`\`\``;
    const parts = splitMessage(text, 120);
    // The first code piece may share its message with the intro; look at the fenced part.
    const codeParts = parts.filter((p) => p.includes('console.log')).map((p) => p.slice(p.indexOf('```js')));
    expect(codeParts.length).toBeGreaterThan(1);
    for (const part of codeParts) {
      expect(part.startsWith('```js\n')).toBe(true);
      expect(part.endsWith('\n```')).toBe(true);
      expect(part.length).toBeLessThanOrEqual(120);
    }
    const lines = codeParts.flatMap((p) => p.split('\n').slice(1, -1));
    expect(lines.join('\n')).toBe(body);
  });

  it('respects each platform limit on a long reply', () => {
    const reply = Array.from({ length: 200 }, (_, i) => `Paragraph ${i}: ${'lorem ipsum '.repeat(20)}`).join(
      '\n\n',
    );
    for (const limit of [2000, 4096]) {
      const parts = splitMessage(reply, limit);
      expect(parts.length).toBeGreaterThan(1);
      for (const part of parts) expect(part.length).toBeLessThanOrEqual(limit);
      expect(parts.join('\n\n').replace(/\s+/g, ' ').trim()).toBe(reply.replace(/\s+/g, ' ').trim());
    }
  });
});
