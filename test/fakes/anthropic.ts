/**
 * A loopback fake of Anthropic's Messages API (`POST /v1/messages`). It checks what
 * the real API checks (x-api-key, anthropic-version, max_tokens, a conversation that
 * starts with a user turn and alternates, a valid thinking budget), answers in
 * Anthropic's exact shapes, and records every request for assertions.
 *
 *     const fake = await startFakeAnthropic({ apiKey: 'sk-ant-test', reply: (body) => 'hi' });
 *     // provider baseUrl: fake.url   (e.g. http://127.0.0.1:PORT — the provider appends /v1/messages)
 *     expect(fake.requests[0].body.max_tokens).toBe(4096);
 *     await fake.close();
 *
 * `GET /v1/models` (`agentgate doctor`'s probe) lists `models`, behind the same key check.
 *
 * A request with `"stream": true` is answered as the real API streams: `text/event-stream`
 * with the events `message_start`, `content_block_start`, `ping`, one `content_block_delta`
 * (`text_delta`) per piece, `content_block_stop`, `message_delta` (the stop reason) and
 * `message_stop`, `streamDelayMs` apart. A string reply is streamed word by word;
 * `{stream: [...]}` names the pieces, and may end in an `error` event (Anthropic's
 * `overloaded_error`) or a dropped connection instead of `message_stop`.
 *
 * Tool use: `{toolUses: [{name, input}], text?}` answers with `tool_use` content blocks
 * (`stop_reason: "tool_use"`; `inputJson` instead of `input` is streamed as it is, malformed
 * or not), and streamed as the real API streams them: per block a `content_block_start` with
 * `{type: "tool_use", id, name, input: {}}`, the input in `input_json_delta` `partial_json`
 * fragments, then `content_block_stop`. The body checks include the API's own for tools
 * (`tools[i].name` matching `^[a-zA-Z0-9_-]{1,64}$`, an `input_schema` of type object) and
 * for the turns of a tool loop (every `tool_use` answered by a `tool_result` in the user
 * turn right after it, and no `tool_result` without its `tool_use`). `script([...])`
 * answers a sequence of replies, one per request, the last one again once it runs out.
 * With `thinking` enabled, the last assistant turn, when it called tools, must start with
 * its `thinking` block sent back unchanged (signature included), as the real API demands.
 *
 * Usage (docs/usage.md): every answer carries the real API's `usage` — `input_tokens` (the
 * uncached input only), `output_tokens`, `cache_read_input_tokens`,
 * `cache_creation_input_tokens` — streamed as the API streams it: all of it in
 * `message_start` (`output_tokens` 1 so far), the final `output_tokens` in `message_delta`.
 * The counts are `options.usage` (default 10 input, 5 output, no cache), or one reply's
 * own: `{usage: {input, output, cacheRead, cacheWrite}, reply}`.
 *
 * Prompt caching (docs/usage.md, "Prompt caching"; anthropic-cache.ts): `cache_control` is
 * checked wherever it is sent, as the API checks it (at most 4 breakpoints, none on a thinking
 * block, an empty text block or a message itself). With `caching` on, the fake caches as the
 * API does — the prefixes up to the breakpoints, by a hash of what they hold — and an answer
 * that names no usage of its own reports the tokens counted from the request (about 4
 * characters each): `cache_read_input_tokens` for the longest prefix found,
 * `cache_creation_input_tokens` for the rest up to the last breakpoint, `input_tokens` for
 * what follows, and `output_tokens` for the reply.
 */
import type { ServerResponse } from 'node:http';
import {
  approxTokens,
  checkCacheControl,
  type FakeCacheOptions,
  FakePromptCache,
} from './anthropic-cache.js';
import {
  AbortWatch,
  pieces,
  readBody,
  sendEventStream,
  sendJson,
  sendText,
  startServer,
  type WireEvent,
  waitUnlessClosed,
} from './support.js';

export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  system?: unknown;
  messages: { role: string; content: unknown }[];
  thinking?: { type: string; budget_tokens?: number };
  [key: string]: unknown;
}

/**
 * What the handler answers: reply text; an API error in Anthropic's shape; any JSON
 * body (for odd replies); or a raw body (for malformed replies).
 */
export type FakeAnthropicReply =
  | string
  | { status: number; error: string; type?: string; retryAfter?: string }
  | { status?: number; json: unknown }
  | { status?: number; raw: string; contentType?: string }
  | { stream: string[]; fail?: { error: string; type?: string } | 'drop' }
  | FakeToolUseReply
  | { usage: FakeAnthropicUsage; reply: FakeAnthropicReply };

/** The tokens an answer reports; `input` is the uncached input, as the real API's `input_tokens`. */
export interface FakeAnthropicUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

const DEFAULT_USAGE: FakeAnthropicUsage = { input: 10, output: 5 };

/** A usage as the real API writes it; `output` instead of the reply's own (a stream's start). */
export function wireAnthropicUsage(usage: FakeAnthropicUsage, output = usage.output) {
  return {
    input_tokens: usage.input,
    cache_creation_input_tokens: usage.cacheWrite ?? 0,
    cache_read_input_tokens: usage.cacheRead ?? 0,
    output_tokens: output,
    service_tier: 'standard',
  };
}

/** A reply asking for tool calls (ids default to `toolu_fake<n>`). */
export interface FakeToolUseReply {
  toolUses: { id?: string; name: string; input?: unknown; inputJson?: string }[];
  /** Text the model writes before the calls; absent: none. */
  text?: string;
  /** A signed `thinking` block before everything else (extended thinking); absent: none. */
  thinking?: string;
}

export type FakeAnthropicHandler = (
  body: AnthropicMessagesBody,
  request: RecordedAnthropicRequest,
) => FakeAnthropicReply | Promise<FakeAnthropicReply>;

export interface RecordedAnthropicRequest {
  method: string;
  path: string;
  /** Lower-case header names, as node:http gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (undefined when it did not parse). */
  body: AnthropicMessagesBody;
  /** Set when the client closed the connection before the reply was sent (an abort). */
  aborted: boolean;
}

export interface FakeAnthropicOptions {
  /** When set, requests must carry `x-api-key: <apiKey>`; when unset, any or none is accepted. */
  apiKey?: string;
  /** Decides the reply; default answers `Fake reply to: <last message content>`. */
  reply?: FakeAnthropicHandler;
  /** Delay before every reply, in ms; ends early when the client disconnects. */
  delayMs?: number;
  /** What `GET /v1/models` lists (doctor's probe); default claude-sonnet-4-5, claude-haiku-4-5. */
  models?: string[];
  /** Between two events of a streamed answer, in ms; default 20. */
  streamDelayMs?: number;
  /** The usage every answer reports, unless the reply names its own; default 10 input, 5 output. */
  usage?: FakeAnthropicUsage;
  /**
   * Prompt caching modelled (anthropic-cache.ts): the usage is counted from each request and
   * its reply, the cache read and written as the API would (a reply's own usage still wins).
   * `true` is `{}` (prefixes of 1024 tokens and more are cached).
   */
  caching?: boolean | FakeCacheOptions;
}

export interface FakeAnthropic {
  /** The server's origin, e.g. `http://127.0.0.1:PORT` — Anthropic's baseUrl has no `/v1`. */
  url: string;
  requests: RecordedAnthropicRequest[];
  setReply(handler: FakeAnthropicHandler): void;
  /** Answers these replies in order, one per request, then the last one again. */
  script(replies: FakeAnthropicReply[]): void;
  /** Resolves when a request's connection is closed by the client before its reply. */
  nextAbort(): Promise<RecordedAnthropicRequest>;
  /** Forgets the prompt cache (`caching`). */
  clearCache(): void;
  close(): Promise<void>;
}

/** The error `type` Anthropic uses for each status. */
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  let handler: FakeAnthropicHandler = options.reply ?? defaultReply;
  const requests: RecordedAnthropicRequest[] = [];
  const aborts = new AbortWatch<RecordedAnthropicRequest>();
  let counter = 0;
  const cache = options.caching
    ? new FakePromptCache(options.caching === true ? {} : options.caching)
    : undefined;

  const server = await startServer(async (req, res) => {
    const body = (await readBody(req)).json as AnthropicMessagesBody | undefined;
    const recorded: RecordedAnthropicRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: body as AnthropicMessagesBody,
      aborted: false,
    };
    requests.push(recorded);
    aborts.watch(res, recorded);

    // The models list (`agentgate doctor`'s probe): the same key check, then Anthropic's list shape.
    if (recorded.path === '/v1/models' && recorded.method === 'GET') {
      const key = req.headers['x-api-key'];
      if (options.apiKey !== undefined && !key) return sendError(res, 401, 'x-api-key header is required');
      if (options.apiKey !== undefined && key !== options.apiKey)
        return sendError(res, 401, 'invalid x-api-key');
      const ids = options.models ?? ['claude-sonnet-4-5', 'claude-haiku-4-5'];
      const data = ids.map((id) => ({
        type: 'model',
        id,
        display_name: id,
        created_at: '2025-09-29T00:00:00Z',
      }));
      return sendChunkedJson(res, 200, {
        data,
        has_more: false,
        first_id: ids[0] ?? null,
        last_id: ids.at(-1) ?? null,
      });
    }
    if (recorded.path !== '/v1/messages' || recorded.method !== 'POST') {
      return sendError(res, 404, `Not Found: ${recorded.method} ${recorded.path}`);
    }
    if (options.apiKey !== undefined) {
      const key = req.headers['x-api-key'];
      if (!key) return sendError(res, 401, 'x-api-key header is required');
      if (key !== options.apiKey) return sendError(res, 401, 'invalid x-api-key');
    }
    if (!req.headers['anthropic-version'])
      return sendError(res, 400, 'anthropic-version: header is required');
    const problem =
      body === undefined ? 'There was an issue with your request body: invalid JSON' : checkBody(body);
    if (problem) return sendError(res, 400, problem);

    let reply = await handler(body as AnthropicMessagesBody, recorded);
    let usage = options.usage ?? DEFAULT_USAGE;
    let named = false;
    while (typeof reply === 'object' && 'usage' in reply && 'reply' in reply) {
      usage = reply.usage;
      reply = reply.reply;
      named = true;
    }
    if (cache && !named)
      usage = { ...cache.input(body as AnthropicMessagesBody), output: outputTokens(reply) };
    if (options.delayMs) await waitUnlessClosed(res, options.delayMs);
    if (res.destroyed) return;
    counter += 1;
    const id = `msg_fake${counter}`;
    const model = (body as AnthropicMessagesBody).model;
    const streamed = (body as AnthropicMessagesBody).stream === true;
    if (streamed && typeof reply === 'object' && 'toolUses' in reply) {
      return streamToolUses(res, reply, id, model, options.streamDelayMs ?? 20, usage);
    }
    if (streamed && (typeof reply === 'string' || 'stream' in reply)) {
      return streamReply(res, reply, id, model, options.streamDelayMs ?? 20, usage);
    }
    sendReply(res, reply, id, model, usage);
  });

  return {
    url: server.url,
    requests,
    setReply(next) {
      handler = next;
    },
    script(replies) {
      let next = 0;
      handler = () => replies[Math.min(next++, replies.length - 1)] as FakeAnthropicReply;
    },
    nextAbort: () => aborts.next(),
    clearCache: () => cache?.clear(),
    close: server.close,
  };
}

/** A reply's output tokens, counted as the cache counts its input (about 4 characters each). */
function outputTokens(reply: FakeAnthropicReply): number {
  if (typeof reply === 'string') return Math.max(1, approxTokens(reply));
  if ('stream' in reply) return Math.max(1, approxTokens(reply.stream.join('')));
  if ('toolUses' in reply) return Math.max(1, approxTokens(JSON.stringify(reply)));
  return 1;
}

function defaultReply(body: AnthropicMessagesBody): string {
  const last = body.messages[body.messages.length - 1];
  return `Fake reply to: ${typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content)}`;
}

/** The body checks the real API makes, with its wording. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/**
 * Content blocks as the real API takes them: `text` anywhere; in a user turn also `image`
 * (a `base64` source of png/jpeg/gif/webp) and `document` (a `base64` source of
 * application/pdf, or a `text` source).
 */
function checkBlocks(role: string, blocks: unknown[], at: string): string | undefined {
  if (blocks.length === 0) return `${at}: all messages must have non-empty content`;
  for (const [j, block] of blocks.entries()) {
    const b = block as { type?: unknown; text?: unknown; source?: Record<string, unknown> };
    const where = `${at}.${j}`;
    if (b?.type === 'text') {
      if (typeof b.text !== 'string' || !b.text)
        return `${where}.text: text content blocks must be non-empty`;
      continue;
    }
    if (b?.type === 'tool_use' || b?.type === 'tool_result') {
      const problem = checkToolBlock(role, block as ToolBlock, where);
      if (problem) return problem;
      continue;
    }
    if (b?.type === 'thinking' || b?.type === 'redacted_thinking') {
      if (role !== 'assistant') return `${where}: ${b.type} blocks are only allowed in assistant messages`;
      continue;
    }
    if (b?.type !== 'image' && b?.type !== 'document') {
      return `${where}: Input tag '${String(b?.type)}' found using 'type' does not match any of the expected tags`;
    }
    if (role !== 'user') return `${where}: ${b.type} blocks are only allowed in user messages`;
    const source = b.source;
    if (source?.type !== 'base64')
      return `${where}.source.type: only base64 sources are accepted by this fake`;
    const allowed = b.type === 'image' ? IMAGE_TYPES : new Set(['application/pdf']);
    if (typeof source.media_type !== 'string' || !allowed.has(source.media_type)) {
      return `${where}.source.media_type: Input should be ${[...allowed].map((t) => `'${t}'`).join(', ')}`;
    }
    if (typeof source.data !== 'string' || source.data.length % 4 !== 0 || !BASE64.test(source.data)) {
      return `${where}.source.data: invalid base64 data`;
    }
  }
  return undefined;
}

function checkBody(body: AnthropicMessagesBody): string | undefined {
  if (!body || typeof body !== 'object') return 'The request body must be a JSON object.';
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system)) {
    return 'system: Input should be a valid string';
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return 'messages: at least one message is required';
  for (const [i, message] of body.messages.entries()) {
    if (message?.role !== 'user' && message?.role !== 'assistant') {
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    }
    if (i === 0 && message.role !== 'user') return 'messages: first message must use the "user" role';
    if (i > 0 && body.messages[i - 1]?.role === message.role) {
      return 'messages: roles must alternate between "user" and "assistant"';
    }
    if (typeof message.content === 'string' ? !message.content : !Array.isArray(message.content)) {
      return `messages.${i}: all messages must have non-empty content`;
    }
    if (Array.isArray(message.content)) {
      const problem = checkBlocks(message.role, message.content, `messages.${i}.content`);
      if (problem) return problem;
    }
  }
  const toolProblem =
    checkTools(body.tools) ??
    checkToolTurns(body.messages) ??
    checkThinkingKept(body) ??
    checkCacheControl(body);
  if (toolProblem) return toolProblem;
  if (body.thinking !== undefined) {
    const { type, budget_tokens: budget } = body.thinking;
    if (type === 'enabled') {
      if (!Number.isInteger(budget) || (budget as number) < 1024) {
        return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
      }
      if (body.max_tokens <= (budget as number))
        return '`max_tokens` must be greater than `thinking.budget_tokens`';
    } else if (type !== 'disabled') {
      return `thinking.type: Input tag '${type}' found using 'type' does not match any of the expected tags`;
    }
  }
  return undefined;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

interface ToolBlock {
  type: 'tool_use' | 'tool_result';
  id?: unknown;
  name?: unknown;
  input?: unknown;
  tool_use_id?: unknown;
  content?: unknown;
  is_error?: unknown;
}

function checkToolBlock(role: string, block: ToolBlock, where: string): string | undefined {
  if (block.type === 'tool_use') {
    if (role !== 'assistant') return `${where}: tool_use blocks are only allowed in assistant messages`;
    if (typeof block.id !== 'string' || !block.id) return `${where}.id: Field required`;
    if (typeof block.name !== 'string' || !TOOL_NAME.test(block.name))
      return `${where}.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
    if (!block.input || typeof block.input !== 'object' || Array.isArray(block.input))
      return `${where}.input: Input should be a valid dictionary`;
    return undefined;
  }
  if (role !== 'user') return `${where}: tool_result blocks are only allowed in user messages`;
  if (typeof block.tool_use_id !== 'string') return `${where}.tool_use_id: Field required`;
  if (block.content !== undefined && typeof block.content !== 'string' && !Array.isArray(block.content))
    return `${where}.content: Input should be a valid string`;
  if (block.is_error !== undefined && typeof block.is_error !== 'boolean')
    return `${where}.is_error: Input should be a valid boolean`;
  return undefined;
}

/** `tools`, as the real API checks them. */
function checkTools(tools: unknown): string | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) return 'tools: Input should be a valid list';
  for (const [i, tool] of tools.entries()) {
    const t = tool as { name?: unknown; input_schema?: { type?: unknown } } | null;
    if (typeof t?.name !== 'string' || !TOOL_NAME.test(t.name))
      return `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
    if (t.input_schema?.type !== 'object')
      return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
  }
  return undefined;
}

/** Every `tool_use` answered by a `tool_result` in the next (user) turn, and no result without its use. */
function checkToolTurns(messages: AnthropicMessagesBody['messages']): string | undefined {
  const blocksOf = (content: unknown) => (Array.isArray(content) ? (content as ToolBlock[]) : []);
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'user') continue;
    const previous = i > 0 ? blocksOf(messages[i - 1]?.content) : [];
    const uses = new Set(previous.filter((b) => b?.type === 'tool_use').map((b) => b.id));
    for (const block of blocksOf(message.content)) {
      if (block?.type === 'tool_result' && !uses.has(block.tool_use_id)) {
        return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
    }
    const answered = new Set(blocksOf(message.content).map((b) => b?.tool_use_id));
    const missing = [...uses].filter((id) => !answered.has(id));
    if (missing.length > 0) {
      return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
  }
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant' && blocksOf(last.content).some((b) => b?.type === 'tool_use')) {
    return 'messages: the last assistant turn asks for tools, and no results follow it';
  }
  return undefined;
}

/** The signature the fake signs a thinking block with: the API checks it is sent back unchanged. */
export function fakeSignature(thinking: string): string {
  return Buffer.from(`sig:${thinking}`).toString('base64');
}

/** With thinking on, a last assistant turn that called tools starts with its signed thinking block. */
function checkThinkingKept(body: AnthropicMessagesBody): string | undefined {
  if (body.thinking?.type !== 'enabled') return undefined;
  const last = [...body.messages].reverse().find((m) => m.role === 'assistant');
  const blocks = Array.isArray(last?.content) ? (last.content as Record<string, unknown>[]) : [];
  if (!blocks.some((b) => b?.type === 'tool_use')) return undefined;
  const first = blocks[0];
  if (first?.type === 'redacted_thinking') return undefined;
  if (first?.type !== 'thinking') {
    return `messages: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block.`;
  }
  if (first.signature !== fakeSignature(String(first.thinking)))
    return 'messages: Invalid `signature` in `thinking` block';
  return undefined;
}

function toolUseBlocks(reply: FakeToolUseReply, id: string) {
  return reply.toolUses.map((use, n) => ({
    type: 'tool_use',
    id: use.id ?? `toolu_${id}_${n}`,
    name: use.name,
    input: use.input ?? {},
    inputJson: use.inputJson ?? JSON.stringify(use.input ?? {}),
  }));
}

/** A string in about three fragments, as the API streams a tool's input. */
function fragments(text: string): string[] {
  if (text.length < 3) return [text];
  const third = Math.ceil(text.length / 3);
  return [text.slice(0, third), text.slice(third, 2 * third), text.slice(2 * third)];
}

/** Tool use streamed in the real API's event format. */
function streamToolUses(
  res: ServerResponse,
  reply: FakeToolUseReply,
  id: string,
  model: string,
  delayMs: number,
  usage: FakeAnthropicUsage,
): Promise<void> {
  const wire = (event: string, data: Record<string, unknown>): WireEvent => ({
    event,
    data: JSON.stringify({ type: event, ...data }),
  });
  const events: WireEvent[] = [
    wire('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: wireAnthropicUsage(usage, 1),
      },
    }),
  ];
  let index = 0;
  if (reply.thinking !== undefined) {
    events.push(
      wire('content_block_start', {
        index,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      }),
    );
    for (const thinking of pieces(reply.thinking)) {
      events.push(wire('content_block_delta', { index, delta: { type: 'thinking_delta', thinking } }));
    }
    events.push(
      wire('content_block_delta', {
        index,
        delta: { type: 'signature_delta', signature: fakeSignature(reply.thinking) },
      }),
      wire('content_block_stop', { index }),
    );
    index++;
  }
  if (reply.text !== undefined) {
    events.push(wire('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const text of pieces(reply.text)) {
      events.push(wire('content_block_delta', { index, delta: { type: 'text_delta', text } }));
    }
    events.push(wire('content_block_stop', { index }));
    index++;
  }
  for (const use of toolUseBlocks(reply, id)) {
    events.push(
      wire('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: use.id, name: use.name, input: {} },
      }),
      wire('ping', {}),
    );
    for (const partial_json of fragments(use.inputJson)) {
      events.push(wire('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }));
    }
    events.push(wire('content_block_stop', { index }));
    index++;
  }
  events.push(
    wire('message_delta', {
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { output_tokens: usage.output },
    }),
    wire('message_stop', {}),
  );
  return sendEventStream(res, events, { delayMs, end: 'end' });
}

/** A streamed answer in the real API's event format. */
function streamReply(
  res: ServerResponse,
  reply: string | { stream: string[]; fail?: { error: string; type?: string } | 'drop' },
  id: string,
  model: string,
  delayMs: number,
  usage: FakeAnthropicUsage,
): Promise<void> {
  const wire = (event: string, data: Record<string, unknown>): WireEvent => ({
    event,
    data: JSON.stringify({ type: event, ...data }),
  });
  const texts = typeof reply === 'string' ? pieces(reply) : reply.stream;
  const fail = typeof reply === 'string' ? undefined : reply.fail;
  const events: WireEvent[] = [
    wire('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: wireAnthropicUsage(usage, 1),
      },
    }),
    wire('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    wire('ping', {}),
    ...texts.map((text) => wire('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
  ];
  if (fail === undefined) {
    events.push(
      wire('content_block_stop', { index: 0 }),
      wire('message_delta', {
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage.output },
      }),
      wire('message_stop', {}),
    );
  } else if (fail !== 'drop') {
    events.push(wire('error', { error: { type: fail.type ?? 'overloaded_error', message: fail.error } }));
  }
  return sendEventStream(res, events, { delayMs, end: fail === 'drop' ? 'drop' : 'end' });
}

function sendReply(
  res: ServerResponse,
  reply: FakeAnthropicReply,
  id: string,
  model: string,
  usage: FakeAnthropicUsage,
) {
  if (typeof reply !== 'string' && 'toolUses' in reply) {
    return sendChunkedJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [
        ...(reply.thinking === undefined
          ? []
          : [{ type: 'thinking', thinking: reply.thinking, signature: fakeSignature(reply.thinking) }]),
        ...(reply.text === undefined ? [] : [{ type: 'text', text: reply.text }]),
        ...toolUseBlocks(reply, id).map(({ inputJson: _, ...block }) => block),
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: wireAnthropicUsage(usage),
    });
  }
  // Pieces asked of a request that does not stream: the whole reply at once.
  if (typeof reply !== 'string' && 'stream' in reply)
    return sendReply(res, reply.stream.join(''), id, model, usage);
  if (typeof reply === 'string') {
    return sendChunkedJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text: reply }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: wireAnthropicUsage(usage),
    });
  }
  if ('error' in reply) {
    const headers: Record<string, string> =
      reply.retryAfter === undefined ? {} : { 'retry-after': reply.retryAfter };
    return sendError(res, reply.status, reply.error, reply.type, headers);
  }
  if ('json' in reply) return sendChunkedJson(res, reply.status ?? 200, reply.json);
  if ('raw' in reply)
    return sendText(res, reply.status ?? 200, reply.raw, {
      'content-type': reply.contentType ?? 'text/plain',
    });
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type?: string,
  headers: Record<string, string> = {},
): void {
  sendChunkedJson(
    res,
    status,
    { type: 'error', error: { type: type ?? ERROR_TYPES[status] ?? 'api_error', message } },
    headers,
  );
}

/** The fake's answers have always come without content-length (chunked). */
function sendChunkedJson(
  res: ServerResponse,
  status: number,
  json: unknown,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, json, headers, { contentLength: false });
}
