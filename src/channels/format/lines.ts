/**
 * Layout shared by the writers whose formatting lives in the text itself
 * (Slack, WhatsApp, Markdown, plain text, Signal): blocks separated by a line
 * or a blank line, quotes as `> ` at the start of each line, and, for Signal,
 * style ranges kept in step with the text they cover.
 */
import type { TextStyle } from './part.js';
import type { Block } from './tree.js';

export class Builder {
  text = '';
  readonly styles: TextStyle[] = [];
  private linePrefix = '';

  /** Appends text; each line break in it is followed by the current quote prefix. */
  append(text: string, styles: readonly TextStyle['style'][] = []): void {
    const start = this.text.length;
    this.text += this.linePrefix === '' ? text : text.replace(/\n/g, `\n${this.linePrefix}`);
    const length = this.text.length - start;
    if (length === 0) return;
    for (const style of styles) {
      const last = this.styles.at(-1);
      // Touching ranges of one style become one (fewer, longer ranges for Signal).
      if (last && last.style === style && last.start + last.length === start) last.length += length;
      else this.styles.push({ start, length, style });
    }
  }

  /** Starts a block quoted `depth` deep: its first line and every following one get `> `. */
  quote(depth: number): void {
    this.linePrefix = '> '.repeat(depth);
    this.text += this.linePrefix;
  }
}

/** Writes blocks one after another with their gaps; `write` appends one block. */
export function layout(blocks: Block[], write: (block: Block, out: Builder) => void): Builder {
  const out = new Builder();
  blocks.forEach((block, i) => {
    if (i > 0) {
      const previous = blocks[i - 1] as Block;
      // A blank line inside one quote keeps the quote going.
      const blank =
        previous.quote > 0 && block.quote > 0 ? '>'.repeat(Math.min(previous.quote, block.quote)) : '';
      out.quote(0);
      out.append(block.gap === 'line' ? '\n' : `\n${blank}\n`);
    }
    out.quote(block.quote);
    write(block, out);
  });
  out.quote(0);
  return out;
}
