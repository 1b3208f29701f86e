/**
 * A Messages API answer's `usage` (docs/usage.md): `input_tokens`, `output_tokens`,
 * `cache_read_input_tokens`, `cache_creation_input_tokens`. Anthropic's `input_tokens`
 * leaves out the cached tokens, so the input here is all three input fields summed.
 * Streamed, `message_start` carries the usage so far and each `message_delta` the counts
 * that grew (cumulative, `output_tokens` at least): the last value of each field wins.
 */
import { type ModelUsage, tokenCount } from '../kit/usage.js';

interface WireUsage {
  input_tokens?: unknown;
  output_tokens?: unknown;
  cache_read_input_tokens?: unknown;
  cache_creation_input_tokens?: unknown;
}

export function anthropicUsage(usage: unknown): ModelUsage | undefined {
  if (!usage || typeof usage !== 'object') return undefined;
  return fromFields(usage as WireUsage);
}

function fromFields(u: WireUsage): ModelUsage {
  const cacheRead = tokenCount(u.cache_read_input_tokens);
  const cacheWrite = tokenCount(u.cache_creation_input_tokens);
  return {
    inputTokens: tokenCount(u.input_tokens) + cacheRead + cacheWrite,
    outputTokens: tokenCount(u.output_tokens),
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
  };
}

/** A streamed message's usage: `message_start`'s, then each `message_delta`'s fields over it. */
export class StreamedUsage {
  private fields: WireUsage | undefined;

  /** `message_start`'s `message.usage`, or a `message_delta`'s `usage`. */
  add(usage: unknown): void {
    if (!usage || typeof usage !== 'object') return;
    const present = Object.fromEntries(
      Object.entries(usage as Record<string, unknown>).filter(([, value]) => typeof value === 'number'),
    );
    this.fields = { ...this.fields, ...present };
  }

  usage(): ModelUsage | undefined {
    return this.fields ? fromFields(this.fields) : undefined;
  }
}
