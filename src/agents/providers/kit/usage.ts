/**
 * The tokens one model call used, as every provider reports them (docs/usage.md): the API's
 * own fields read into one shape. `inputTokens` counts every input token, the cached ones
 * included (OpenAI's `prompt_tokens` does; Anthropic's `input_tokens` does not, so that
 * provider adds its cache fields back in).
 */

export interface ModelUsage {
  /** Every input token of the call, those read from or written to the prompt cache included. */
  inputTokens: number;
  outputTokens: number;
  /** Input tokens read from the provider's prompt cache. */
  cacheReadTokens: number;
  /** Input tokens written to the provider's prompt cache (Anthropic's cache creation). */
  cacheWriteTokens: number;
}

export const NO_USAGE: Readonly<ModelUsage> = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
});

/** A token count from an API's answer: a non-negative integer, anything else 0. */
export function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** Two usages summed. */
export function addUsage(a: ModelUsage, b: ModelUsage): ModelUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
  };
}
