/**
 * One interface for every model provider (`models.providers`; docs/agent-runs.md, "Providers"):
 * a single turn — system prompt plus conversation — in, reply text out.
 */
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
  /** Oldest first; the last one is the new user turn. */
  messages: ChatMessage[];
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
}

export interface CompletionResult {
  text: string;
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
