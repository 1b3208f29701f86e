/**
 * `api: "openai-chat"` — the Chat Completions wire format, which OpenAI, Ollama,
 * vLLM, llama.cpp, LM Studio and OpenRouter all speak: POST `{baseUrl}/chat/completions`.
 */

import { nestedErrorMessage, postJson, postJsonStream, trimSlash } from '../kit/http-json.js';
import { ToolNames } from '../kit/tool-names.js';
import {
  type CompletionRequest,
  type CompletionResult,
  type ModelProvider,
  type ModelUsage,
  ProviderError,
} from '../kit/types.js';
import type { OpenAiChatConfig } from './config.js';
import { promptCacheKey } from './prompt-cache-key.js';
import { StreamedToolCalls, toolCallsOf, wireTools } from './tool-calls.js';
import { openAiUsage } from './usage.js';
import { wireMessage } from './wire-messages.js';

export function createOpenAiChatProvider(name: string, config: OpenAiChatConfig): ModelProvider {
  const url = `${trimSlash(config.baseUrl)}/chat/completions`;
  const label = `openai-chat provider "${name}"`;

  return {
    name,
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      // Made once per request: the tools' names on the wire, and back (kit/tool-names.ts).
      const names = new ToolNames(request.tools ?? []);
      const messages = [
        ...(request.system ? [{ role: 'system', content: request.system }] : []),
        ...request.messages.map((message) => wireMessage(message, names)),
      ];
      const body: Record<string, unknown> = { model: request.model, messages };
      // One cache per session, under a digest of its key (prompt-cache-key.ts); `promptCache: false` sends none.
      if (config.promptCache !== false && request.sessionKey) {
        body.prompt_cache_key = promptCacheKey(request.sessionKey);
      }
      // `off` (or no level) sends nothing: non-reasoning models reject the field outright.
      if (request.thinking && request.thinking !== 'off') body.reasoning_effort = request.thinking;
      // No tools, no field: the request is exactly what it is without them.
      if (request.tools?.length) body.tools = wireTools(request.tools, names);

      const headers: Record<string, string> = { ...config.headers };
      // Local servers (Ollama, llama.cpp, ...) need no key; send one only when configured.
      if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;

      const call = {
        label,
        url,
        headers,
        body,
        signal: request.signal,
        errorMessage: nestedErrorMessage,
        secrets: [config.apiKey],
      };
      if (request.onDelta) return streamed(call, request.onDelta, names);
      return reply(label, await postJson(call), names);
    },
  };
}

/**
 * A streamed completion (docs/agent-runs.md, "Streamed calls"): `stream: true`, then
 * `data:` chunks whose `choices[0].delta.content` are the reply's pieces, up to
 * `data: [DONE]`. `stream_options: {include_usage: true}` asks for the call's token usage
 * (docs/usage.md): a last chunk before `[DONE]` with empty `choices` and `usage`. A chunk
 * holding `error` (OpenRouter reports failures mid-stream that way) fails the call.
 * Tool calls come as `delta.tool_calls` pieces, put together by their `index`
 * (tool-calls.ts); only text content is handed to `onDelta`.
 */
async function streamed(
  call: Parameters<typeof postJson>[0],
  onDelta: (text: string) => void,
  names: ToolNames,
): Promise<CompletionResult> {
  const { label } = call;
  // Filled from the event callback as the chunks arrive.
  const got: { text: string; refusal: string; ended: boolean; usage?: ModelUsage } = {
    text: '',
    refusal: '',
    ended: false,
  };
  const toolCalls = new StreamedToolCalls();
  const body = { ...(call.body as object), stream: true, stream_options: { include_usage: true } };
  await postJsonStream({ ...call, body }, (event) => {
    if (got.ended) return;
    if (event.data === '[DONE]') {
      got.ended = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(event.data);
    } catch {
      throw new ProviderError(`${label}: sent a stream chunk that is not JSON`);
    }
    const error = nestedErrorMessage(chunk);
    if (error !== undefined) throw new ProviderError(`${label}: ${error}`, undefined, { transient: true });
    got.usage = openAiUsage((chunk as { usage?: unknown }).usage) ?? got.usage;
    const choice = (
      chunk as {
        choices?: { delta?: { content?: unknown; refusal?: unknown; tool_calls?: unknown } }[];
      }
    ).choices?.[0];
    toolCalls.add(choice?.delta?.tool_calls);
    const content = choice?.delta?.content;
    if (typeof content === 'string' && content) {
      got.text += content;
      onDelta(content);
    }
    if (typeof choice?.delta?.refusal === 'string') got.refusal += choice.delta.refusal;
  });
  if (!got.ended) {
    throw new ProviderError(`${label}: the stream ended before [DONE]`, undefined, { transient: true });
  }
  const calls = toolCalls.calls(names);
  const usage = got.usage ? { usage: got.usage } : {};
  if (calls.length) return { text: got.text, calls, ...usage };
  if (got.text.trim()) return { text: got.text, ...usage };
  if (got.refusal) throw new ProviderError(`${label}: the model refused: ${got.refusal}`);
  throw new ProviderError(`${label}: returned no text`);
}

/** The reply's text, the tool calls it asks for (`message.tool_calls`), if any, and its `usage`. */
function reply(label: string, json: unknown, names: ToolNames): CompletionResult {
  const body = json as {
    choices?: { message?: { content?: unknown; refusal?: unknown; tool_calls?: unknown } }[];
  } | null;
  const message = Array.isArray(body?.choices) ? body.choices[0]?.message : undefined;
  if (!message) {
    // Some gateways (OpenRouter) answer 200 with an error body instead of choices.
    const error = nestedErrorMessage(json);
    throw new ProviderError(`${label}: ${error ?? 'returned no choices'}`);
  }
  const text = contentText(message.content);
  const calls = toolCallsOf(message.tool_calls, names);
  const reported = openAiUsage((json as { usage?: unknown }).usage);
  const usage = reported ? { usage: reported } : {};
  if (calls.length) return { text, calls, ...usage };
  if (text.trim()) return { text, ...usage };
  if (typeof message.refusal === 'string' && message.refusal) {
    throw new ProviderError(`${label}: the model refused: ${message.refusal}`);
  }
  throw new ProviderError(`${label}: returned no text`);
}

/** `content` is a string, or (some servers) an array of parts of which the text parts count. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) =>
      part && typeof part === 'object' && part.type === 'text' && typeof part.text === 'string'
        ? part.text
        : '',
    )
    .join('');
}
