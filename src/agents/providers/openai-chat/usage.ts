/**
 * A Chat Completions answer's `usage` (docs/usage.md): `prompt_tokens` (cached ones
 * included), `completion_tokens`, `prompt_tokens_details.cached_tokens`. The API has no
 * cache writes. Undefined when the answer has no usage (some compatible servers send none).
 */
import { type ModelUsage, tokenCount } from '../kit/usage.js';

export function openAiUsage(usage: unknown): ModelUsage | undefined {
  if (!usage || typeof usage !== 'object') return undefined;
  const u = usage as {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown } | null;
  };
  return {
    inputTokens: tokenCount(u.prompt_tokens),
    outputTokens: tokenCount(u.completion_tokens),
    cacheReadTokens: tokenCount(u.prompt_tokens_details?.cached_tokens),
    cacheWriteTokens: 0,
  };
}
