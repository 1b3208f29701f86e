/**
 * The schemas of usage and cost (docs/usage.md): the `usage` of a RunView and of a heartbeat,
 * and `GET /api/usage`'s query and answer, for the checks and the OpenAPI document
 * (admin-schemas.ts).
 */
import { z } from 'zod';
import { USAGE_BUCKETS, USAGE_GROUPINGS } from '../store/types.js';

const tokens = (what: string) => z.number().int().describe(what);

export const UsageView = z
  .object({
    inputTokens: tokens('Every input token, those read from or written to the prompt cache included.'),
    outputTokens: tokens('Output tokens.'),
    cacheReadTokens: tokens('Input tokens read from the prompt cache.'),
    cacheWriteTokens: tokens('Input tokens written to the prompt cache.'),
    costUsd: z
      .number()
      .nullable()
      .describe('Their cost at the model’s price (`models.providers.<name>.prices`); null when it has none.'),
  })
  .describe('Its model calls’ usage, summed (docs/usage.md); zeros until it finishes.');

/** A duration back from now (`30m`, `24h`, `7d`, `1w`). */
const DURATION = /^(\d+(?:\.\d+)?)(s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `since`/`until`: an ISO 8601 time with a zone, or a duration back from now; read as ms since the epoch. */
export function pointInTime(value: string, now: number): number | undefined {
  const duration = DURATION.exec(value);
  if (duration) return now - Math.round(Number(duration[1]) * (UNIT_MS[duration[2] as string] as number));
  if (!z.iso.datetime({ offset: true }).safeParse(value).success) return undefined;
  return Date.parse(value);
}

const timeParam = (what: string) => {
  const problem =
    'must be an ISO 8601 time with a time zone (e.g. "2026-11-28T15:00:00Z") or a duration (e.g. "24h")';
  return z
    .string({ error: problem })
    .refine((value) => pointInTime(value, Date.now()) !== undefined, problem)
    .optional()
    .describe(what);
};

const quoted = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');

export const UsageQuery = z.object({
  by: z
    .enum(USAGE_GROUPINGS, { error: `must be one of ${quoted(USAGE_GROUPINGS)}` })
    .default('hook')
    .describe('Group the runs by their hook (run source), hook token, agent or model; default `hook`.'),
  since: timeParam(
    'Runs that finished at or after this time (ISO 8601, or a duration back from now: `24h`); default 24 h ago.',
  ),
  until: timeParam('…and strictly before this one (ISO 8601, or a duration back from now); default now.'),
  bucket: z
    .enum(USAGE_BUCKETS, { error: `must be one of ${quoted(USAGE_BUCKETS)}` })
    .optional()
    .describe(
      'Split each group by the UTC hour or day its runs finished in (each row then has `at`), the oldest ' +
        'bucket first; without it, one row per group.',
    ),
});

export const UsageAnswer = z.object({
  usage: z
    .array(
      UsageView.extend({
        key: z
          .string()
          .nullable()
          .describe(
            'The hook (`hook:agent`, `hook:<mapping id>`), token id, agent id or model; null for runs without one.',
          ),
        runs: z
          .number()
          .int()
          .describe('The runs that finished in the window (in the bucket, with `bucket`).'),
        at: z
          .string()
          .optional()
          .describe(
            'With `bucket`: the start of the row’s bucket, ISO 8601 in UTC (`2026-11-28T15:00:00.000Z`).',
          ),
        costUsd: z
          .number()
          .nullable()
          .describe('The cost of the group’s priced runs; null when none was priced.'),
      }).describe('One group'),
    )
    .describe('The groups, the costliest first; with `bucket`, the oldest bucket first, then the costliest.'),
});
