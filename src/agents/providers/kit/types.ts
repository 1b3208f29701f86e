/**
 * One interface for every model provider (`models.providers`; docs/agent-runs.md, "Providers"):
 * a single turn — system prompt plus conversation — in, reply text out. With tools offered
 * (docs/agent-runs.md, "Tools"), the reply may instead ask for tool calls, and the
 * conversation carries the calls made and their results, in a form of no provider's own.
 */
import type { ToolSpec } from '../../../tools/types.js';
import type { ModelUsage } from './usage.js';

export type { ModelUsage, ToolSpec };

export type ThinkingLevel = 'off' | 'minimal' | 'low' | 'medium' | 'high';

export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
  /**
   * Images and PDFs given with this turn (the run's own new user turn only; docs/attachments.md),
   * for the providers that take them as parts of their own; the others ignore them (the turn's
   * text names each file).
   */
  attachments?: ModelAttachment[];
  /** The tools an assistant turn asked for (a tool loop's earlier model call); absent for none. */
  toolCalls?: ModelToolCall[];
  /**
   * Content of the provider's own that must go back unchanged with this assistant turn while
   * its tool calls are answered (Anthropic's signed thinking blocks). Kept in memory only: a
   * resumed run has none, and the provider does without (see anthropic-messages).
   */
  providerBlocks?: unknown[];
}

/** A tool call the model asked for, with the tool's own `<server>.<tool>` name (decoded). */
export interface ModelToolCall {
  /** The provider's id for the call (`tool_calls[].id`, `tool_use.id`); a result answers it. */
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  /**
   * Why the arguments the model wrote could not be read as a JSON object (then `arguments` is
   * empty and the call is not made: the model is told what went wrong). Absent when they could.
   */
  invalidArguments?: string;
}

/** The result of one tool call, given back to the model in the turn after its call. */
export interface ToolResultMessage {
  role: 'tool';
  /** The `id` of the call it answers. */
  callId: string;
  /** Already wrapped in the safety boundary (docs/untrusted-content.md). */
  text: string;
  isError: boolean;
}

export type ConversationMessage = ChatMessage | ToolResultMessage;

/** Whether a message is a user or assistant turn (not a tool result). */
export function isChatMessage(message: ConversationMessage): message is ChatMessage {
  return message.role !== 'tool';
}

/** A file for the model: an image (`image/png`, `image/jpeg`, `image/gif`, `image/webp`) or a PDF. */
export interface ModelAttachment {
  name: string;
  mediaType: string;
  data: Buffer;
}

export interface CompletionRequest {
  /** The model id after the provider prefix, e.g. "gpt-4o-mini" for "openai/gpt-4o-mini". */
  model: string;
  system?: string;
  /**
   * Oldest first; the last one is the new user turn — or, in a tool loop, the results of the
   * tools the previous assistant turn called.
   */
  messages: ConversationMessage[];
  thinking?: ThinkingLevel | null;
  /** Aborted when the run's `timeoutSeconds` expire or the gateway stops. */
  signal: AbortSignal;
  /**
   * A streamed run (docs/callers.md, "Streamed answers"): the provider asks its API for a
   * streamed answer and calls this with each piece of the reply text as it arrives; the
   * pieces joined are the text it returns. Providers that cannot stream (`echo`,
   * `command`) call it once with the whole reply. Absent: nothing is streamed.
   */
  onDelta?: (text: string) => void;
  /**
   * Tools the model may call (docs/agent-runs.md, "Tools"); absent or empty: none, and the
   * request is exactly what it is without tools. `openai-chat` and `anthropic-messages` offer
   * them (under names their APIs accept, kit/tool-names.ts); `command` and `echo` take none.
   */
  tools?: readonly ToolSpec[];
  /**
   * The session the call is a turn of. Providers with prompt caching (docs/usage.md, "Prompt
   * caching") may key their cache by it — a digest of it only, never the key itself, which can
   * hold a sender's identifiers. Absent: a call of no session.
   */
  sessionKey?: string;
}

export interface CompletionResult {
  /** The model's text; may be empty when it asked for tool calls. */
  text: string;
  /** The tool calls it asked for, in its order; absent or empty: `text` is its final answer. */
  calls?: ModelToolCall[];
  /** With calls: what goes back with this turn as `providerBlocks`; absent for nothing. */
  providerBlocks?: unknown[];
  /** The tokens the call used, as the API reported them (docs/usage.md); absent when it reported none. */
  usage?: ModelUsage;
}

export interface ModelProvider {
  /** The provider's name in `models.providers`. */
  readonly name: string;
  complete(request: CompletionRequest): Promise<CompletionResult>;
}

/** A provider failure with a message fit for `run.error` (never a secret). */
export class ProviderError extends Error {
  /** Whether trying again later may succeed (rate limit, overload, network), so the turn retries it. */
  readonly transient: boolean;
  /** How long the provider asked us to wait (`Retry-After`), when it said. */
  readonly retryAfterMs?: number;

  constructor(
    message: string,
    /** HTTP status from the provider, when there was one. */
    readonly status?: number,
    options: { transient?: boolean; retryAfterMs?: number } = {},
  ) {
    super(message);
    this.name = 'ProviderError';
    this.transient = options.transient ?? (status !== undefined && isTransientStatus(status));
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

/** Statuses that say "not now" rather than "never": timeout, rate limit, server trouble. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
