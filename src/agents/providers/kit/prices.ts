/**
 * A provider entry's price table (docs/usage.md, "Prices"): `prices` maps the provider's model
 * ids to USD per million tokens, and a call's cost follows from its usage. A cache price left
 * out is the `input` price: a provider that does not discount cached tokens needs none.
 */
import { z } from 'zod';
import type { ModelUsage } from './usage.js';

const perMillion = z.number().nonnegative();

export const modelPrice = z.strictObject({
  input: perMillion,
  output: perMillion,
  cacheRead: perMillion.optional(),
  cacheWrite: perMillion.optional(),
});
export type ModelPrice = z.output<typeof modelPrice>;

/** `models.providers.<name>.prices`: model id → its price. */
export const pricesField = z.record(z.string(), modelPrice).optional();

/**
 * The cost of `usage` in USD: the uncached input at `input`, the cache reads at `cacheRead`,
 * the cache writes at `cacheWrite`, the output at `output`, all per million tokens.
 */
export function costOf(usage: ModelUsage, price: ModelPrice): number {
  const uncached = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens);
  const micro =
    uncached * price.input +
    usage.cacheReadTokens * (price.cacheRead ?? price.input) +
    usage.cacheWriteTokens * (price.cacheWrite ?? price.input) +
    usage.outputTokens * price.output;
  return micro / 1_000_000;
}
