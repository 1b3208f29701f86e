/**
 * Markdown → a platform's native formatting, split within its limit
 * (docs/recipients.md, "Formatting per platform", "Splitting"). The reply is
 * parsed once into blocks (tree.ts); the platform's writer formats a list of
 * blocks as one message; the splitter (split.ts) measures the writer's output,
 * so limits hold on what is sent and a cut never falls inside a tag, a span or
 * a code block.
 */
import type { OutboundPart } from './part.js';
import { splitBlocks } from './split.js';
import { type Block, parseMarkdown } from './tree.js';

export interface Writer {
  /** The blocks written as one message. */
  write(blocks: Block[]): OutboundPart;
  /** What the platform counts against its limit (default: the text's UTF-16 length). */
  measure?(part: OutboundPart): number;
}

/** The messages that carry a Markdown reply on a platform, each within `limit`. */
export function renderMarkdown(markdown: string, writer: Writer, limit: number): OutboundPart[] {
  const measure = writer.measure ?? ((part: OutboundPart) => part.text.length);
  const size = (blocks: Block[]) => measure(writer.write(blocks));
  const parts = splitBlocks(parseMarkdown(markdown), size, limit).map((blocks) => writer.write(blocks));
  const sendable = parts.filter((part) => part.text.trim() !== '');
  // Nothing to show (only whitespace): the text as it is, which the adapter refuses as empty.
  return sendable.length > 0 ? sendable : [{ text: markdown }];
}
