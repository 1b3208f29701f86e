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

/** How `GET /api/usage?bucket=` splits each group over time: UTC hours or UTC days. */
export const USAGE_BUCKETS = ['hour', 'day'] as const;
export type UsageBucket = (typeof USAGE_BUCKETS)[number];

/** Each bucket's length: a UTC hour and a UTC day both start at a multiple of it since the epoch. */
export const USAGE_BUCKET_MS: Record<UsageBucket, number> = { hour: 3_600_000, day: 86_400_000 };

export interface UsageSummaryOptions {
  by: UsageGrouping;
  /** Split each group by the bucket its runs finished in; one row per group when absent. */
  bucket?: UsageBucket;
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
  /** With a bucket: the start of the row's bucket, ISO 8601 (UTC). */
  at?: string;
}
