/**
 * What the model is given of a `tools/call` (docs/tools.md, "What the model gets"): the
 * result's text content joined, a short note for anything that is not text, and for every
 * failure a plain sentence — never the raw error, which may carry a URL or a header.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ToolOutcome } from '../types.js';
import { MAX_RESULT_CHARS } from './limits.js';

/** The parts of a `CallToolResult` this reads; everything else in it is ignored. */
export interface CallResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  [key: string]: unknown;
}

export function outcomeOf(result: CallResultLike): ToolOutcome {
  const parts = Array.isArray(result.content) ? result.content : [];
  let text = parts.map(partText).join('\n');
  if (text === '' && result.structuredContent !== undefined) text = JSON.stringify(result.structuredContent);
  if (result.isError === true) {
    return {
      status: 'error',
      text: bounded(text) || 'the tool reported an error without saying what it was',
    };
  }
  return { status: 'ok', text: bounded(text) };
}

/** A content block as text: its text, or a note of what was left out. */
function partText(part: unknown): string {
  const block = (part ?? {}) as { type?: unknown; text?: unknown; uri?: unknown; resource?: unknown };
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'image':
      return '[image omitted]';
    case 'audio':
      return '[audio omitted]';
    case 'resource_link':
      return `[resource link: ${typeof block.uri === 'string' ? block.uri : 'no uri'}]`;
    case 'resource': {
      const resource = (block.resource ?? {}) as { text?: unknown; uri?: unknown };
      if (typeof resource.text === 'string') return resource.text;
      return `[binary resource omitted${typeof resource.uri === 'string' ? `: ${resource.uri}` : ''}]`;
    }
    default:
      return `[${typeof block.type === 'string' ? block.type : 'unknown'} content omitted]`;
  }
}

function bounded(text: string): string {
  if (text.length <= MAX_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_RESULT_CHARS)}\n[${text.length - MAX_RESULT_CHARS} more characters cut]`;
}

/** True when the error is the connection's, not the server's answer: the server is to be started again. */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed;
  return !isInvalidAnswer(error);
}

/** The SDK refused the server's answer as not of the result's shape (a zod error, with its issues). */
export function isInvalidAnswer(error: unknown): boolean {
  return error instanceof Error && Array.isArray((error as { issues?: unknown }).issues);
}

/** The server forgot the session (it restarted): the Streamable HTTP spec says start a new one. */
export function isSessionGone(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code === 404;
}

/** A short reason without secrets: a JSON-RPC error's message, an HTTP status, a network error's code. */
export function describeFailure(error: unknown): string {
  if (error instanceof McpError) {
    const message = error.message.replace(`MCP error ${error.code}: `, '');
    return `${oneLine(message)} (JSON-RPC error ${error.code})`;
  }
  if (error instanceof StreamableHTTPError) return `HTTP ${error.code ?? 'error'}: ${oneLine(error.message)}`;
  if (isInvalidAnswer(error)) return 'the server answered with something that is not a valid MCP result';
  const code = networkCode(error);
  if (code) return code;
  return oneLine(error instanceof Error ? error.message : String(error));
}

function networkCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = cause?.code ?? (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,40}$/.test(code) ? code : undefined;
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 300)}…` : flat;
}
