/**
 * Usage as both drivers store it (docs/usage.md), written once: the same columns on `runs` and
 * `heartbeats` (the summed usage, its model and cost) and on `run_steps` (a model step's own
 * call), their values in that order, how a row reads back as the view's `usage`, and the
 * summary `GET /api/usage` reads — one statement on both drivers, only the placeholders differ.
 */
import type {
  ModelStep,
  RunUsage,
  TokenUsage,
  UsageBucket,
  UsageGroup,
  UsageGrouping,
  UsageSummaryOptions,
  UsageView,
} from '../types.js';
import { USAGE_BUCKET_MS } from '../types.js';

/** The usage columns of `runs` and `heartbeats`, in the order `usageValues` gives them. */
export const USAGE_COLUMNS =
  'usage_model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd';

/** The usage columns of `run_steps` (a model step's call), in the order `stepUsageValues` gives them. */
export const STEP_USAGE_COLUMNS = 'input_tokens, output_tokens, cache_read_tokens, cache_write_tokens';

/** A row's usage columns as a driver reads them (PostgreSQL's sums may come as text). */
export interface UsageColumns {
  /** The model that answered (the last call's); null before the completion or without a call. */
  usage_model?: string | null;
  input_tokens: number | string | null;
  output_tokens: number | string | null;
  cache_read_tokens: number | string | null;
  cache_write_tokens: number | string | null;
  cost_usd?: number | string | null;
}

/** `USAGE_COLUMNS`' values for a completion's or heartbeat's usage; zeros (and no model) for none. */
export function usageValues(usage: RunUsage | undefined): unknown[] {
  if (!usage) return [null, 0, 0, 0, 0, null];
  return [
    usage.model,
    usage.inputTokens,
    usage.outputTokens,
    usage.cacheReadTokens,
    usage.cacheWriteTokens,
    usage.costUsd,
  ];
}

/** `STEP_USAGE_COLUMNS`' values: a model step's call's, nulls for a tool step or none reported. */
export function stepUsageValues(usage: TokenUsage | undefined): unknown[] {
  if (!usage) return [null, null, null, null];
  return [usage.inputTokens, usage.outputTokens, usage.cacheReadTokens, usage.cacheWriteTokens];
}

const count = (value: number | string | null | undefined): number => (value == null ? 0 : Number(value));

function tokensOf(row: UsageColumns): TokenUsage {
  return {
    inputTokens: count(row.input_tokens),
    outputTokens: count(row.output_tokens),
    cacheReadTokens: count(row.cache_read_tokens),
    cacheWriteTokens: count(row.cache_write_tokens),
  };
}

/** A run's or heartbeat's row as its view's `usage`. */
export function usageViewOf(row: UsageColumns): UsageView {
  return { ...tokensOf(row), costUsd: row.cost_usd == null ? null : Number(row.cost_usd) };
}

/** A `run_steps` row's usage, for the model step it reads back as; undefined when it has none. */
export function stepUsageOf(row: UsageColumns): Pick<ModelStep, 'usage'> {
  return row.input_tokens == null ? {} : { usage: tokensOf(row) };
}

/** The `runs` column each grouping sums by (from a closed set, so it goes into SQL as is). */
const GROUP_COLUMNS: Record<UsageGrouping, string> = {
  hook: 'source',
  tokenId: 'token_id',
  agent: 'agent_id',
  model: 'usage_model',
};

/**
 * The summary's statement: `since` and `until` are its two parameters, written `placeholder(1)`
 * and `placeholder(2)` (`?` on SQLite, `$1` on PostgreSQL). Through `runs_finished`. With a
 * bucket, each group is split by the UTC hour or day its runs finished in: `finished_at` is
 * integer milliseconds on both drivers, so the bucket's start is `finished_at` less its
 * remainder by the bucket's length (from a closed set, so it goes into SQL as is); the rows
 * then come oldest bucket first, the costliest group first within one.
 */
export function usageSummarySql(
  by: UsageGrouping,
  placeholder: (n: number) => string,
  bucket?: UsageBucket,
): string {
  const column = GROUP_COLUMNS[by];
  if (!column) throw new Error(`unknown usage grouping ${by}`);
  const length = bucket === undefined ? undefined : USAGE_BUCKET_MS[bucket];
  if (bucket !== undefined && !length) throw new Error(`unknown usage bucket ${bucket}`);
  const at = length ? `finished_at - (finished_at % ${length})` : undefined;
  return `SELECT ${column} AS group_key, ${at ? `${at} AS bucket_at, ` : ''}COUNT(*) AS runs,
                 SUM(input_tokens) AS input_tokens,
                 SUM(output_tokens) AS output_tokens, SUM(cache_read_tokens) AS cache_read_tokens,
                 SUM(cache_write_tokens) AS cache_write_tokens, SUM(cost_usd) AS cost_usd
            FROM runs
           WHERE finished_at IS NOT NULL AND finished_at >= ${placeholder(1)} AND finished_at < ${placeholder(2)}
           GROUP BY ${column}${at ? `, ${at}` : ''}
           ORDER BY ${at ? `${at}, ` : ''}COALESCE(SUM(cost_usd), -1) DESC, SUM(input_tokens) + SUM(output_tokens) DESC, ${column}`;
}

export const usageSummaryValues = (options: UsageSummaryOptions): [number, number] => [
  options.since,
  options.until,
];

export interface UsageGroupRow extends UsageColumns {
  group_key: string | null;
  runs: number | string;
  /** The bucket's start in ms (PostgreSQL's BIGINT comes as text); only with a bucket. */
  bucket_at?: number | string;
}

export function toUsageGroup(row: UsageGroupRow): UsageGroup {
  const group: UsageGroup = { key: row.group_key, runs: Number(row.runs), ...usageViewOf(row) };
  if (row.bucket_at != null) group.at = new Date(Number(row.bucket_at)).toISOString();
  return group;
}
