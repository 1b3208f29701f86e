/**
 * The conversation as Messages API turns. Plain turns as ever (`alternatingTurns`, files as
 * content blocks: docs/attachments.md); in a tool loop (docs/agent-runs.md, "Tools") an
 * assistant turn that called tools holds its text and one `tool_use` block per call, and
 * the results answering it are `tool_result` blocks of the one user turn after it
 * (`is_error` on a failed call), as the API requires.
 */
import type { ToolNames } from '../kit/tool-names.js';
import type { ChatMessage, ConversationMessage, ToolResultMessage } from '../kit/types.js';

export interface WireTurn {
  role: string;
  content: unknown;
}

export function wireTurns(messages: readonly ConversationMessage[], names: ToolNames): WireTurn[] {
  // The turns before the loop's first call are plain; the loop's own come after them.
  const loopStart = messages.findIndex((m) => m.role === 'tool' || (m.toolCalls?.length ?? 0) > 0);
  const plain = (loopStart < 0 ? messages : messages.slice(0, loopStart)) as ChatMessage[];
  const turns = alternatingTurns(plain).map(toWire);
  if (loopStart < 0) return turns;
  for (const message of messages.slice(loopStart)) {
    if (message.role === 'tool') addResult(turns, message);
    else turns.push(loopTurn(message, names));
  }
  return turns;
}

/** A result joins the user turn of results right before it, or opens one. */
function addResult(turns: WireTurn[], result: ToolResultMessage): void {
  const block = {
    type: 'tool_result',
    tool_use_id: result.callId,
    content: result.text,
    ...(result.isError ? { is_error: true } : {}),
  };
  const last = turns[turns.length - 1];
  if (last?.role === 'user' && Array.isArray(last.content) && last.content[0]?.type === 'tool_result') {
    last.content.push(block);
  } else turns.push({ role: 'user', content: [block] });
}

function loopTurn({ role, content, toolCalls, providerBlocks }: ChatMessage, names: ToolNames): WireTurn {
  if (!toolCalls?.length) return { role, content };
  return {
    role,
    content: [
      // Thinking blocks first, unchanged (thinking-blocks.ts).
      ...(providerBlocks ?? []),
      // An empty text block is refused: a turn that only called tools has none.
      ...(content ? [{ type: 'text', text: content }] : []),
      ...toolCalls.map((call) => ({
        type: 'tool_use',
        id: call.id,
        name: names.encode(call.name),
        input: call.arguments,
      })),
    ],
  };
}

/**
 * The Messages API wants the conversation to start with a user turn and to alternate.
 * A trimmed history can start with an assistant turn (dropped: it answers a question
 * that is no longer there), and a failed run can leave two user turns in a row
 * (merged into one, so neither is lost).
 */
function alternatingTurns(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const { role, content, attachments } of messages) {
    const last = out[out.length - 1];
    if (!last && role === 'assistant') continue;
    if (last && last.role === role) {
      last.content = `${last.content}\n\n${content}`;
      if (attachments?.length) last.attachments = [...(last.attachments ?? []), ...attachments];
    } else out.push(attachments?.length ? { role, content, attachments } : { role, content });
  }
  return out;
}

/**
 * A turn on the wire: plain text, or with files (docs/attachments.md) content blocks —
 * each image an `image` block and each PDF a `document` block, both with a `base64`
 * source, before the text (as Anthropic recommends).
 */
function toWire({ role, content, attachments }: ChatMessage): WireTurn {
  if (!attachments?.length) return { role, content };
  return {
    role,
    content: [
      ...attachments.map(({ mediaType, data }) => ({
        type: mediaType === 'application/pdf' ? 'document' : 'image',
        source: { type: 'base64', media_type: mediaType, data: data.toString('base64') },
      })),
      { type: 'text', text: content },
    ],
  };
}
