/**
 * Extended thinking with tool use (docs/agent-runs.md, "Tools"): while tools are used, the
 * Messages API wants the `thinking` (with its `signature`) and `redacted_thinking` blocks of
 * the assistant turn that called them sent back unchanged, first in that turn. They are
 * kept with the turn in memory (`providerBlocks`); a resumed run no longer has them, and
 * then its next call is made without thinking rather than refused.
 */
import type { ConversationMessage } from '../kit/types.js';

interface ThinkingBlock {
  type: 'thinking' | 'redacted_thinking';
  [key: string]: unknown;
}

const isThinking = (block: unknown): block is ThinkingBlock => {
  const type = (block as { type?: unknown } | null)?.type;
  return type === 'thinking' || type === 'redacted_thinking';
};

/** The thinking blocks of a reply's content, in order. */
export function thinkingBlocksOf(content: readonly unknown[]): ThinkingBlock[] {
  return content.filter(isThinking);
}

/** Whether the last assistant turn called tools and its thinking blocks are not at hand. */
export function thinkingLost(messages: readonly ConversationMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as ConversationMessage;
    if (message.role !== 'assistant') continue;
    return (message.toolCalls?.length ?? 0) > 0 && !message.providerBlocks?.length;
  }
  return false;
}

/** Streamed thinking blocks: `content_block_start`, then `thinking_delta`s and a `signature_delta`. */
export class StreamedThinking {
  private readonly byIndex = new Map<number, ThinkingBlock>();

  start(index: unknown, block: unknown): void {
    if (typeof index !== 'number' || !isThinking(block)) return;
    this.byIndex.set(
      index,
      block.type === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { ...block },
    );
  }

  delta(index: unknown, delta: { type?: unknown; thinking?: unknown; signature?: unknown }): void {
    const block = typeof index === 'number' ? this.byIndex.get(index) : undefined;
    if (block?.type !== 'thinking') return;
    if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') {
      block.thinking = `${String(block.thinking)}${delta.thinking}`;
    } else if (delta.type === 'signature_delta' && typeof delta.signature === 'string') {
      block.signature = delta.signature;
    }
  }

  blocks(): ThinkingBlock[] {
    return [...this.byIndex.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
  }
}
