/**
 * A loopback fake of OpenAI's Chat Completions endpoint. It checks what the real API
 * checks (path, method, bearer token, a JSON body with `model` and `messages`), answers
 * in OpenAI's exact shapes, and records every request for assertions.
 *
 *     const fake = await startFakeOpenAi({ apiKey: 'sk-test', reply: (body) => 'hi' });
 *     // provider baseUrl: fake.baseUrl   (e.g. http://127.0.0.1:PORT/v1)
 *     expect(fake.requests[0].body.model).toBe('gpt-4o-mini');
 *     await fake.close();
 *
 * `GET {prefix}/models` (`agentgate doctor`'s probe) lists `models`, behind the same key check.
 *
 * A request with `"stream": true` is answered as the real API streams: `text/event-stream`,
 * `data:` lines of `chat.completion.chunk` objects (a first one with the role, one per piece of
 * `choices[0].delta.content`, a last one with `finish_reason`), then `data: [DONE]`, the chunks
 * `streamDelayMs` apart. A string reply is streamed word by word; `{stream: [...]}` names the
 * pieces, and may end in an error chunk or a dropped connection instead of `[DONE]`.
 *
 * Tool calling: `{toolCalls: [{name, arguments}], text?}` answers with `message.tool_calls`
 * (`finish_reason: "tool_calls"`; `arguments` a string is sent as it is, malformed or not,
 * an object as its JSON), and streamed as the real API streams calls: per call a first
 * `delta.tool_calls[{index, id, type, function: {name, arguments: ""}}]`, then the arguments
 * in `{index, function: {arguments}}` fragments. The body checks include the API's own for
 * tools (`tools[i].function.name` matching `^[a-zA-Z0-9_-]{1,64}$`) and for the turns of a
 * tool loop (each `role: "tool"` message answering a `tool_call_id` of the assistant turn
 * before it, every call answered). `script([...])` answers a sequence of replies, one per
 * request, the last one again once it runs out.
 */
import type { ServerResponse } from 'node:http';
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

export interface OpenAiChatBody {
  model: string;
  messages: WireMessage[];
  reasoning_effort?: string;
  [key: string]: unknown;
}

/**
 * What the handler answers: reply text; an API error in OpenAI's shape; any JSON body
 * (for odd replies); or a raw body (for malformed replies). `delayMs` holds the reply
 * back — the wait ends early when the client disconnects.
 */
export type FakeOpenAiReply =
  | string
  | { status: number; error: string; type?: string; code?: string | null; retryAfter?: string }
  | { status?: number; json: unknown }
  | { status?: number; raw: string; contentType?: string }
  | { stream: string[]; fail?: { error: string } | 'drop' }
  | FakeToolCallsReply
  | { usage: FakeOpenAiUsage; reply: FakeOpenAiReply };

/** The tokens an answer reports: `prompt` counts the `cached` ones too, as the real API's does. */
export interface FakeOpenAiUsage {
  prompt: number;
  completion: number;
  cached?: number;
}

const DEFAULT_USAGE: FakeOpenAiUsage = { prompt: 10, completion: 5 };

/** A usage as the real API writes it. */
export function wireOpenAiUsage(usage: FakeOpenAiUsage) {
  return {
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
    prompt_tokens_details: { cached_tokens: usage.cached ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** A reply asking for tool calls (ids default to `call_<n>`). */
export interface FakeToolCallsReply {
  toolCalls: { id?: string; name: string; arguments: string | Record<string, unknown> }[];
  /** Text the model writes with the calls; absent: `content: null`. */
  text?: string;
}

export type FakeOpenAiHandler = (
  body: OpenAiChatBody,
  request: RecordedRequest,
) => FakeOpenAiReply | Promise<FakeOpenAiReply>;

export interface RecordedRequest {
  method: string;
  path: string;
  /** Lower-case header names, as node:http gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (undefined when it did not parse). */
  body: OpenAiChatBody;
  /** Set when the client closed the connection before the reply was sent (an abort). */
  aborted: boolean;
}

export interface FakeOpenAiOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>`; when unset, any or none is accepted. */
  apiKey?: string;
  /** Path the endpoint lives under; `/v1` like api.openai.com. */
  pathPrefix?: string;
  /** Decides the reply; default answers `Fake reply to: <last message content>`. */
  reply?: FakeOpenAiHandler;
  /** Delay before every reply, in ms. */
  delayMs?: number;
  /** What `GET {prefix}/models` lists (doctor's probe); default gpt-4o-mini, gpt-4o. */
  models?: string[];
  /** Between two chunks of a streamed answer, in ms; default 20. */
  streamDelayMs?: number;
  /** The usage every answer reports, unless the reply names its own; default 10 prompt, 5 completion. */
  usage?: FakeOpenAiUsage;
}

export interface FakeOpenAi {
  /** Base URL to configure a provider with, e.g. `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** The server's origin, e.g. `http://127.0.0.1:PORT`. */
  url: string;
  requests: RecordedRequest[];
  /** Replace the handler between tests. */
  setReply(handler: FakeOpenAiHandler): void;
  /** Answers these replies in order, one per request, then the last one again. */
  script(replies: FakeOpenAiReply[]): void;
  /** Resolves when a request's connection is closed by the client before its reply. */
  nextAbort(): Promise<RecordedRequest>;
  close(): Promise<void>;
}

const REASONING_EFFORTS = new Set(['minimal', 'low', 'medium', 'high']);
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

export async function startFakeOpenAi(options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> {
  const prefix = options.pathPrefix ?? '/v1';
  let handler: FakeOpenAiHandler = options.reply ?? defaultReply;
  const requests: RecordedRequest[] = [];
  const aborts = new AbortWatch<RecordedRequest>();
  let counter = 0;

  const server = await startServer(async (req, res) => {
    const body = (await readBody(req)).json as OpenAiChatBody | undefined;
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: body as OpenAiChatBody,
      aborted: false,
    };
    requests.push(recorded);
    aborts.watch(res, recorded);

    // The models list (`agentgate doctor`'s probe): the same key check, then OpenAI's list shape.
    if (recorded.path === `${prefix}/models` && recorded.method === 'GET') {
      const auth = req.headers.authorization;
      if (options.apiKey !== undefined && auth !== `Bearer ${options.apiKey}`) {
        return auth
          ? sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key')
          : sendError(res, 401, "You didn't provide an API key.", 'invalid_request_error');
      }
      const data = (options.models ?? ['gpt-4o-mini', 'gpt-4o']).map((id) => ({
        id,
        object: 'model',
        created: 1_700_000_000,
        owned_by: 'fake',
      }));
      return sendChunkedJson(res, 200, { object: 'list', data });
    }
    // The checks the real API makes, in its order: route, auth, then the body.
    if (recorded.path !== `${prefix}/chat/completions`) {
      return sendError(
        res,
        404,
        `Invalid URL (${recorded.method} ${recorded.path})`,
        'invalid_request_error',
      );
    }
    if (recorded.method !== 'POST') {
      return sendError(res, 405, `Invalid method for URL (${recorded.method} ${recorded.path})`);
    }
    if (options.apiKey !== undefined) {
      const auth = req.headers.authorization;
      if (!auth) {
        return sendError(res, 401, "You didn't provide an API key.", 'invalid_request_error');
      }
      if (auth !== `Bearer ${options.apiKey}`) {
        const key = auth.replace(/^Bearer /, '');
        const masked = `${key.slice(0, 3)}****${key.slice(-4)}`;
        return sendError(
          res,
          401,
          `Incorrect API key provided: ${masked}.`,
          'invalid_request_error',
          'invalid_api_key',
        );
      }
    }
    const problem =
      body === undefined ? 'We could not parse the JSON body of your request.' : checkBody(body);
    if (problem) return sendError(res, 400, problem, 'invalid_request_error');

    let reply = await handler(body as OpenAiChatBody, recorded);
    let usage = options.usage ?? DEFAULT_USAGE;
    while (typeof reply === 'object' && 'usage' in reply && 'reply' in reply) {
      usage = reply.usage;
      reply = reply.reply;
    }
    const streamUsage = (body as OpenAiChatBody).stream_options as { include_usage?: unknown } | undefined;
    const wanted = streamUsage?.include_usage === true ? usage : undefined;
    if (options.delayMs) await waitUnlessClosed(res, options.delayMs);
    if (res.destroyed) return;
    counter += 1;
    const id = `chatcmpl-fake${counter}`;
    const model = (body as OpenAiChatBody).model;
    const streamed = (body as OpenAiChatBody).stream === true;
    if (streamed && typeof reply === 'object' && 'toolCalls' in reply) {
      return streamToolCalls(res, reply, id, model, options.streamDelayMs ?? 20, wanted);
    }
    if (streamed && (typeof reply === 'string' || 'stream' in reply)) {
      return streamReply(res, reply, id, model, options.streamDelayMs ?? 20, wanted);
    }
    sendReply(res, reply, id, model, usage);
  });

  return {
    url: server.url,
    baseUrl: `${server.url}${prefix}`,
    requests,
    setReply(next) {
      handler = next;
    },
    script(replies) {
      let next = 0;
      handler = () => replies[Math.min(next++, replies.length - 1)] as FakeOpenAiReply;
    },
    nextAbort: () => aborts.next(),
    close: server.close,
  };
}

function defaultReply(body: OpenAiChatBody): string {
  const last = body.messages[body.messages.length - 1];
  return `Fake reply to: ${typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content)}`;
}

const DATA_URL = /^data:([a-z]+\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/;
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/**
 * Content parts as the real API takes them in a user turn: `text`, `image_url` (an
 * http(s) URL or a base64 `data:` URL of png/jpeg/gif/webp) and `file` (`file_data`, a
 * base64 `data:` URL, with `filename`); only `text` parts in other roles.
 */
function checkParts(role: string, parts: unknown[], at: string): string | undefined {
  for (const [j, part] of parts.entries()) {
    const p = part as {
      type?: unknown;
      text?: unknown;
      image_url?: { url?: unknown };
      file?: Record<string, unknown>;
    };
    const where = `${at}[${j}]`;
    if (p?.type === 'text') {
      if (typeof p.text !== 'string') return `Invalid type for '${where}.text'.`;
      continue;
    }
    if (role !== 'user')
      return `Invalid value: '${String(p?.type)}'. Supported values are: 'text'. ('${where}.type')`;
    if (p?.type === 'image_url') {
      const url = p.image_url?.url;
      if (typeof url !== 'string') return `Missing required parameter: '${where}.image_url.url'.`;
      if (url.startsWith('data:')) {
        const match = DATA_URL.exec(url);
        if (!match || !IMAGE_TYPES.has(match[1] as string)) {
          return `Invalid image URL: '${where}.image_url.url'. Expected a base64-encoded data URL with an image MIME type.`;
        }
      } else if (!/^https?:\/\//.test(url)) {
        return `Invalid image URL: '${where}.image_url.url'.`;
      }
      continue;
    }
    if (p?.type === 'file') {
      const data = p.file?.file_data;
      if (typeof data !== 'string' && typeof p.file?.file_id !== 'string') {
        return `Missing required parameter: '${where}.file.file_data'.`;
      }
      if (typeof data === 'string' && !DATA_URL.test(data)) {
        return `Invalid file data: '${where}.file.file_data'. Expected a base64-encoded data URL.`;
      }
      if (typeof data === 'string' && typeof p.file?.filename !== 'string') {
        return `Missing required parameter: '${where}.file.filename'.`;
      }
      continue;
    }
    return `Invalid value: '${String(p?.type)}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'. ('${where}.type')`;
  }
  return undefined;
}

function checkBody(body: OpenAiChatBody): string | undefined {
  if (!body || typeof body !== 'object') return 'The request body must be a JSON object.';
  if (typeof body.model !== 'string' || !body.model) return 'you must provide a model parameter';
  if (!Array.isArray(body.messages)) return "Missing required parameter: 'messages'.";
  if (body.messages.length === 0)
    return "Invalid 'messages': empty array. Expected an array with minimum length 1.";
  for (const [i, message] of body.messages.entries()) {
    if (!ROLES.has(message?.role)) return `Invalid value for 'messages[${i}].role'.`;
    const callsOnly = message.role === 'assistant' && message.content === null && 'tool_calls' in message;
    if (typeof message.content !== 'string' && !Array.isArray(message.content) && !callsOnly) {
      return `Invalid type for 'messages[${i}].content'.`;
    }
    if (Array.isArray(message.content)) {
      const problem = checkParts(message.role, message.content, `messages[${i}].content`);
      if (problem) return problem;
    }
  }
  const toolProblem = checkTools(body.tools) ?? checkToolTurns(body.messages);
  if (toolProblem) return toolProblem;
  if (body.prompt_cache_key !== undefined && typeof body.prompt_cache_key !== 'string') {
    return "Invalid type for 'prompt_cache_key': expected a string.";
  }
  if (body.reasoning_effort !== undefined && !REASONING_EFFORTS.has(body.reasoning_effort)) {
    return `Invalid value for 'reasoning_effort': '${body.reasoning_effort}'.`;
  }
  return undefined;
}

const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** `tools`, as the real API checks them. */
function checkTools(tools: unknown): string | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) return "Invalid type for 'tools': expected an array.";
  for (const [i, tool] of tools.entries()) {
    const t = tool as { type?: unknown; function?: { name?: unknown; parameters?: unknown } } | null;
    if (t?.type !== 'function') return `Invalid value for 'tools[${i}].type'.`;
    const name = t.function?.name;
    if (typeof name !== 'string' || !FUNCTION_NAME.test(name)) {
      return `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`;
    }
    const parameters = t.function?.parameters;
    if (parameters !== undefined && (typeof parameters !== 'object' || parameters === null)) {
      return `Invalid type for 'tools[${i}].function.parameters'.`;
    }
  }
  return undefined;
}

interface WireMessage {
  role: string;
  content: unknown;
  tool_calls?: { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } }[];
  tool_call_id?: unknown;
}

/** The turns of a tool loop: each call answered by a `tool` message right after its assistant turn. */
function checkToolTurns(messages: WireMessage[]): string | undefined {
  let open: Set<string> | undefined;
  for (const [i, message] of messages.entries()) {
    if (message.role === 'tool') {
      const id = message.tool_call_id;
      if (typeof id !== 'string' || !open?.has(id)) {
        return `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`;
      }
      if (typeof message.content !== 'string') return `Invalid type for 'messages[${i}].content'.`;
      open.delete(id);
      continue;
    }
    if (open && open.size > 0) {
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`;
    }
    open = undefined;
    if (message.role === 'assistant' && message.tool_calls !== undefined) {
      open = new Set();
      for (const [j, call] of message.tool_calls.entries()) {
        if (typeof call?.id !== 'string' || call.type !== 'function') {
          return `Invalid value for 'messages[${i}].tool_calls[${j}]'.`;
        }
        if (typeof call.function?.name !== 'string' || !FUNCTION_NAME.test(call.function.name)) {
          return `Invalid 'messages[${i}].tool_calls[${j}].function.name'.`;
        }
        if (typeof call.function.arguments !== 'string') {
          return `Invalid type for 'messages[${i}].tool_calls[${j}].function.arguments': expected a string.`;
        }
        open.add(call.id);
      }
    }
  }
  if (open && open.size > 0) {
    return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`;
  }
  return undefined;
}

function wireToolCalls(reply: FakeToolCallsReply) {
  return reply.toolCalls.map((call, n) => ({
    id: call.id ?? `call_${n}`,
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
}

/** A string in about three fragments, as the API streams a call's arguments. */
function fragments(text: string): string[] {
  if (text.length < 3) return [text];
  const third = Math.ceil(text.length / 3);
  return [text.slice(0, third), text.slice(third, 2 * third), text.slice(2 * third)];
}

/** Tool calls streamed in the real API's chunk format. */
function streamToolCalls(
  res: ServerResponse,
  reply: FakeToolCallsReply,
  id: string,
  model: string,
  delayMs: number,
  usage: FakeOpenAiUsage | undefined,
): Promise<void> {
  const created = Math.floor(Date.now() / 1000);
  const base = { id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake' };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): WireEvent => ({
    data: JSON.stringify({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(usage ? { usage: null } : {}),
    }),
  });
  const usageChunk = (): WireEvent[] =>
    usage ? [{ data: JSON.stringify({ ...base, choices: [], usage: wireOpenAiUsage(usage) }) }] : [];
  const events: WireEvent[] = [chunk({ role: 'assistant', content: reply.text === undefined ? null : '' })];
  for (const text of reply.text === undefined ? [] : pieces(reply.text))
    events.push(chunk({ content: text }));
  for (const [index, call] of wireToolCalls(reply).entries()) {
    events.push(
      chunk({
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
        ],
      }),
    );
    for (const piece of fragments(call.function.arguments)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  }
  events.push(chunk({}, 'tool_calls'), ...usageChunk(), { data: '[DONE]' });
  return sendEventStream(res, events, { delayMs, end: 'end' });
}

/** A streamed answer in the real API's chunk format. */
function streamReply(
  res: ServerResponse,
  reply: string | { stream: string[]; fail?: { error: string } | 'drop' },
  id: string,
  model: string,
  delayMs: number,
  usage: FakeOpenAiUsage | undefined,
): Promise<void> {
  const created = Math.floor(Date.now() / 1000);
  const base = { id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake' };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): WireEvent => ({
    data: JSON.stringify({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(usage ? { usage: null } : {}),
    }),
  });
  const usageChunk = (): WireEvent[] =>
    usage ? [{ data: JSON.stringify({ ...base, choices: [], usage: wireOpenAiUsage(usage) }) }] : [];
  const texts = typeof reply === 'string' ? pieces(reply) : reply.stream;
  const fail = typeof reply === 'string' ? undefined : reply.fail;
  const events: WireEvent[] = [
    chunk({ role: 'assistant', content: '', refusal: null }),
    ...texts.map((text) => chunk({ content: text })),
  ];
  if (fail === undefined) events.push(chunk({}, 'stop'), ...usageChunk(), { data: '[DONE]' });
  else if (fail !== 'drop') {
    events.push({
      data: JSON.stringify({ error: { message: fail.error, type: 'server_error', code: null } }),
    });
  }
  return sendEventStream(res, events, { delayMs, end: fail === 'drop' ? 'drop' : 'end' });
}

function sendReply(
  res: ServerResponse,
  reply: FakeOpenAiReply,
  id: string,
  model: string,
  usage: FakeOpenAiUsage,
) {
  if (typeof reply !== 'string' && 'toolCalls' in reply) {
    return sendChunkedJson(res, 200, {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: reply.text ?? null, tool_calls: wireToolCalls(reply) },
          finish_reason: 'tool_calls',
        },
      ],
      usage: wireOpenAiUsage(usage),
    });
  }
  // Pieces asked of a request that does not stream: the whole reply at once.
  if (typeof reply !== 'string' && 'stream' in reply)
    return sendReply(res, reply.stream.join(''), id, model, usage);
  if (typeof reply === 'string') {
    return sendChunkedJson(res, 200, {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
      usage: wireOpenAiUsage(usage),
    });
  }
  if ('error' in reply) {
    const headers: Record<string, string> =
      reply.retryAfter === undefined ? {} : { 'retry-after': reply.retryAfter };
    return sendError(res, reply.status, reply.error, reply.type, reply.code, headers);
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
  type = 'invalid_request_error',
  code: string | null = null,
  headers: Record<string, string> = {},
): void {
  sendChunkedJson(res, status, { error: { message, type, param: null, code } }, headers);
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
