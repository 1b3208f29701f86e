/**
 * `api: "anthropic-messages"` — Anthropic's Messages API: POST `{baseUrl}/v1/messages`
 * (baseUrl without `/v1`, e.g. `https://api.anthropic.com`).
 */

import { nestedErrorMessage, postJson, postJsonStream, trimSlash } from '../kit/http-json.js';
import { ToolNames } from '../kit/tool-names.js';
import {
  type CompletionRequest,
  type CompletionResult,
  type ModelProvider,
  type ModelUsage,
  ProviderError,
  type ThinkingLevel,
} from '../kit/types.js';
import type { AnthropicMessagesConfig } from './config.js';
import { cachedSystem, cachedTurns } from './prompt-cache.js';
import { StreamedThinking, thinkingBlocksOf, thinkingLost } from './thinking-blocks.js';
import { StreamedToolUses, toolUsesOf, wireTools } from './tool-use.js';
import { anthropicUsage, StreamedUsage } from './usage.js';
import { wireTurns } from './wire-turns.js';

/** The API version this module's request and reply shapes are written against. */
export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Extended-thinking budget per level, in tokens. 1024 is the API's minimum budget;
 * the rest grow roughly 4x per step so `high` is a real step up from `medium`.
 */
export const THINKING_BUDGET_TOKENS: Record<Exclude<ThinkingLevel, 'off'>, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 24576,
};

export function createAnthropicMessagesProvider(
  name: string,
  config: AnthropicMessagesConfig,
): ModelProvider {
  const url = `${trimSlash(config.baseUrl)}/v1/messages`;
  const label = `anthropic-messages provider "${name}"`;

  return {
    name,
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      // Made once per request: the tools' names on the wire, and back (kit/tool-names.ts).
      const names = new ToolNames(request.tools ?? []);
      // Breakpoints on the system prompt and the newest earlier turn, unless turned off (prompt-cache.ts).
      const cache = config.promptCache !== false;
      const turns = wireTurns(request.messages, names);
      const body: Record<string, unknown> = {
        model: request.model,
        max_tokens: config.maxTokens,
        ...(request.system ? { system: cache ? cachedSystem(request.system) : request.system } : {}),
        messages: cache ? cachedTurns(turns) : turns,
      };
      if (request.thinking && request.thinking !== 'off' && !thinkingLost(request.messages)) {
        const budget = THINKING_BUDGET_TOKENS[request.thinking];
        body.thinking = { type: 'enabled', budget_tokens: budget };
        // The API requires max_tokens > budget_tokens; keep the configured room for the answer on top.
        if (config.maxTokens <= budget) body.max_tokens = budget + config.maxTokens;
      }
      // No tools, no field: the request is exactly what it is without them.
      if (request.tools?.length) body.tools = wireTools(request.tools, names);

      const headers: Record<string, string> = {
        ...config.headers,
        'anthropic-version': ANTHROPIC_VERSION,
      };
      if (config.apiKey) headers['x-api-key'] = config.apiKey;

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

/** Error types of the Messages API that say "not now" rather than "never". */
const TRANSIENT_ERROR_TYPES = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'timeout_error']);

/**
 * A streamed message (docs/agent-runs.md, "Streamed calls"): `stream: true`, then the
 * events `message_start`, per block `content_block_start` / `content_block_delta` /
 * `content_block_stop`, `message_delta` (the stop reason), `message_stop`, with `ping`s
 * between. The reply is the `text_delta`s in order (`thinking_delta`s are the model's
 * scratchpad); an `error` event fails the call (an overload mid-stream is transient).
 * A `tool_use` block's input comes as `input_json_delta` fragments (tool-use.ts); only
 * text is handed to `onDelta`.
 */
async function streamed(
  call: Parameters<typeof postJson>[0],
  onDelta: (text: string) => void,
  names: ToolNames,
): Promise<CompletionResult> {
  const { label } = call;
  // Filled from the event callback as the events arrive.
  const got: { text: string; stopReason?: string; stopped: boolean } = { text: '', stopped: false };
  const toolUses = new StreamedToolUses();
  const thinking = new StreamedThinking();
  const usage = new StreamedUsage();
  await postJsonStream({ ...call, body: { ...(call.body as object), stream: true } }, (event) => {
    if (got.stopped) return;
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(event.data) as Record<string, unknown>;
    } catch {
      throw new ProviderError(`${label}: sent a stream event that is not JSON`);
    }
    const type = event.event ?? data.type;
    if (type === 'error') {
      const error = data.error as { type?: unknown; message?: unknown } | undefined;
      const message = typeof error?.message === 'string' ? error.message : 'the stream reported an error';
      throw new ProviderError(`${label}: ${message}`, undefined, {
        transient: TRANSIENT_ERROR_TYPES.has(String(error?.type)),
      });
    }
    if (type === 'message_start') usage.add((data.message as { usage?: unknown } | undefined)?.usage);
    else if (type === 'content_block_start') {
      toolUses.start(data.index, data.content_block);
      thinking.start(data.index, data.content_block);
    } else if (type === 'content_block_delta') {
      const delta = data.delta as
        | { type?: unknown; text?: unknown; partial_json?: unknown; thinking?: unknown; signature?: unknown }
        | undefined;
      if (delta) thinking.delta(data.index, delta);
      if (delta?.type === 'text_delta' && typeof delta.text === 'string' && delta.text) {
        got.text += delta.text;
        onDelta(delta.text);
      } else if (delta?.type === 'input_json_delta') toolUses.fragment(data.index, delta.partial_json);
    } else if (type === 'message_delta') {
      const reason = (data.delta as { stop_reason?: unknown } | undefined)?.stop_reason;
      if (typeof reason === 'string') got.stopReason = reason;
      usage.add(data.usage);
    } else if (type === 'message_stop') got.stopped = true;
  });
  if (!got.stopped) {
    throw new ProviderError(`${label}: the stream ended before message_stop`, undefined, {
      transient: true,
    });
  }
  const calls = toolUses.calls(names);
  const used = withUsage(usage.usage());
  if (calls.length) return withBlocks({ text: got.text, calls, ...used }, thinking.blocks());
  if (got.text.trim()) return { text: got.text, ...used };
  const stop = got.stopReason ? ` (stop_reason ${got.stopReason})` : '';
  throw new ProviderError(`${label}: returned no text${stop}`);
}

/**
 * The reply is every `text` block in order (`thinking` blocks are the model's scratchpad,
 * not the answer), the `tool_use` blocks are the tool calls it asks for, and `usage` the
 * tokens it used (usage.ts).
 */
function reply(label: string, json: unknown, names: ToolNames): CompletionResult {
  const message = json as { content?: unknown; stop_reason?: unknown } | null;
  if (!Array.isArray(message?.content)) {
    const error = nestedErrorMessage(json);
    throw new ProviderError(`${label}: ${error ?? 'returned no content'}`);
  }
  const text = message.content
    .map((block: unknown) => {
      const b = block as { type?: unknown; text?: unknown } | null;
      return b?.type === 'text' && typeof b.text === 'string' ? b.text : '';
    })
    .join('');
  const calls = toolUsesOf(message.content, names);
  const used = withUsage(anthropicUsage((json as { usage?: unknown }).usage));
  if (calls.length) return withBlocks({ text, calls, ...used }, thinkingBlocksOf(message.content));
  if (text.trim()) return { text, ...used };
  const stop = typeof message.stop_reason === 'string' ? ` (stop_reason ${message.stop_reason})` : '';
  throw new ProviderError(`${label}: returned no text${stop}`);
}

/** The `usage` field of a result: present only when the API reported one. */
function withUsage(usage: ModelUsage | undefined): { usage?: ModelUsage } {
  return usage ? { usage } : {};
}

/** A reply with calls keeps its thinking blocks, to send back with its turn (thinking-blocks.ts). */
function withBlocks(result: CompletionResult, blocks: unknown[]): CompletionResult {
  return blocks.length ? { ...result, providerBlocks: blocks } : result;
}
