/** A `models.providers` entry with `api: "openai-chat"` (docs/agent-runs.md, "Providers"). */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';
import { maxConcurrentField } from '../kit/limits.js';
import { pricesField } from '../kit/prices.js';

export const openAiChatConfig = z.strictObject({
  api: z.literal('openai-chat'),
  /** Model calls in flight to this provider, at most, in one gateway process (docs/agent-runs.md, "Provider limits"). */
  maxConcurrent: maxConcurrentField,
  baseUrl: nonEmpty.default('https://api.openai.com/v1'),
  apiKey: nonEmpty.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  /** USD per million tokens, by model id (docs/usage.md, "Prices"). */
  prices: pricesField,
  /**
   * Prompt caching (docs/usage.md, "Prompt caching"): a `prompt_cache_key` digested from the
   * session key. Absent: on; `false` sends none (for a compatible server that refuses the field).
   */
  promptCache: z.boolean().optional(),
});
export type OpenAiChatConfig = z.output<typeof openAiChatConfig>;
