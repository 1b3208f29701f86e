/** A `models.providers` entry with `api: "anthropic-messages"` (docs/agent-runs.md, "Providers"). */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';
import { pricesField } from '../kit/prices.js';

export const anthropicMessagesConfig = z.strictObject({
  api: z.literal('anthropic-messages'),
  baseUrl: nonEmpty.default('https://api.anthropic.com'),
  apiKey: nonEmpty.optional(),
  maxTokens: z.number().int().positive().default(4096),
  headers: z.record(z.string(), z.string()).optional(),
  /** USD per million tokens, by model id (docs/usage.md, "Prices"). */
  prices: pricesField,
});
export type AnthropicMessagesConfig = z.output<typeof anthropicMessagesConfig>;
