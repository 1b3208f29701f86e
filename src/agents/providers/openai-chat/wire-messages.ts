/**
 * The conversation as Chat Completions messages: user and assistant turns (a user turn with
 * files as content parts, docs/attachments.md), an assistant turn's `tool_calls`, and each
 * tool's result as a `role: "tool"` message answering its `tool_call_id`
 * (docs/agent-runs.md, "Tools").
 */
import type { ToolNames } from '../kit/tool-names.js';
import type { ConversationMessage, ModelAttachment } from '../kit/types.js';

export function wireMessage(message: ConversationMessage, names: ToolNames): Record<string, unknown> {
  if (message.role === 'tool') {
    // The API has no error flag for a tool message: the text says it.
    const content = message.isError ? `The tool call failed.\n${message.text}` : message.text;
    return { role: 'tool', tool_call_id: message.callId, content };
  }
  const { role, content, attachments, toolCalls } = message;
  if (toolCalls?.length) {
    return {
      role,
      // An assistant turn that only called tools has no content: null, as the API sends it.
      content: content || null,
      tool_calls: toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: names.encode(call.name), arguments: JSON.stringify(call.arguments) },
      })),
    };
  }
  return attachments?.length ? { role, content: withParts(content, attachments) } : { role, content };
}

/**
 * A user turn with files, as Chat Completions content parts (docs/attachments.md): the
 * text first, then each image as an `image_url` part holding a `data:` URL, each PDF as
 * a `file` part (`file_data` a `data:` URL, with its file name).
 */
function withParts(text: string, attachments: readonly ModelAttachment[]): unknown[] {
  return [
    { type: 'text', text },
    ...attachments.map(({ name, mediaType, data }) => {
      const url = `data:${mediaType};base64,${data.toString('base64')}`;
      return mediaType === 'application/pdf'
        ? { type: 'file', file: { filename: name, file_data: url } }
        : { type: 'image_url', image_url: { url } };
    }),
  ];
}
