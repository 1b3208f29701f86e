/** A `models.providers` entry with `api: "openai-chat"` (docs/agent-runs.md, "Providers"). */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';
import { pricesField } from '../kit/prices.js';

export const openAiChatConfig = z.strictObject({
  api: z.literal('openai-chat'),
  baseUrl: nonEmpty.default('https://api.openai.com/v1'),
  apiKey: nonEmpty.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  /** USD per million tokens, by model id (docs/usage.md, "Prices"). */
  prices: pricesField,
});
export type OpenAiChatConfig = z.output<typeof openAiChatConfig>;
