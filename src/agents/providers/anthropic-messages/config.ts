/** A `models.providers` entry with `api: "anthropic-messages"` (docs/agent-runs.md, "Providers"). */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';
import { maxConcurrentField } from '../kit/limits.js';
import { pricesField } from '../kit/prices.js';

export const anthropicMessagesConfig = z.strictObject({
  api: z.literal('anthropic-messages'),
  /** Model calls in flight to this provider, at most, in one gateway process (docs/agent-runs.md, "Provider limits"). */
  maxConcurrent: maxConcurrentField,
  baseUrl: nonEmpty.default('https://api.anthropic.com'),
  apiKey: nonEmpty.optional(),
  maxTokens: z.number().int().positive().default(4096),
  headers: z.record(z.string(), z.string()).optional(),
  /** USD per million tokens, by model id (docs/usage.md, "Prices"). */
  prices: pricesField,
  /**
   * Prompt caching (docs/usage.md, "Prompt caching"): breakpoints on the system prompt and the
   * newest earlier turn. Absent: on; `false` sends none.
   */
  promptCache: z.boolean().optional(),
});
export type AnthropicMessagesConfig = z.output<typeof anthropicMessagesConfig>;
