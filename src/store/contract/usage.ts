/**
 * Usage and cost (docs/usage.md): the tokens a run's or a heartbeat's model calls used, summed,
 * and what they cost at the model's price; written with the run's completion (and a tool loop's
 * model steps), read back on its view and summed by `GET /api/usage`.
 */

/** Token counts of one or more model calls; `inputTokens` includes the cached ones. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** The usage of a run or heartbeat as it is shown: its tokens and their cost, null when unpriced. */
export interface UsageView extends TokenUsage {
  costUsd: number | null;
}

/** What a run's completion (or a heartbeat's record) writes: its usage, and the model that made it. */
export interface RunUsage extends UsageView {
  /** `<provider>/<model>`, alias-resolved; null when the turn never resolved one. */
  model: string | null;
}

/** How `GET /api/usage` groups runs: their hook (source), hook token, agent or model. */
export const USAGE_GROUPINGS = ['hook', 'tokenId', 'agent', 'model'] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

export interface UsageSummaryOptions {
  by: UsageGrouping;
  /** Runs finished at or after this time (ms since the epoch)… */
  since: number;
  /** …and strictly before this one. */
  until: number;
}

/** One group of `GET /api/usage`. */
export interface UsageGroup extends UsageView {
  /** The hook (run source), token id, agent id or model; null for runs without one. */
  key: string | null;
  /** The finished runs in the group. */
  runs: number;
}
