/**
 * A mapping's `filter` (docs/mappings.md, "Filters"): conditions on the JSON body (`path`, dot
 * notation) and the headers (`header`, any case) — `equals`, `in`, `exists`, `matches` —
 * combined with `all`, `any` and `not`. The filter is the operator's, the values it reads are
 * the sender's: every pattern is checked here, at load, so none can make a request's check
 * take more than linear-ish time, and the tree is bounded in depth and size.
 */
import safeRegex from 'safe-regex2';
import { z } from 'zod';
import { parsePath } from '../util/json-path.js';

/** Longest `matches` pattern. */
export const MAX_PATTERN_LENGTH = 256;
/** Deepest nesting of `all`/`any`/`not`, and most conditions in one filter. */
export const MAX_FILTER_DEPTH = 8;
export const MAX_FILTER_CONDITIONS = 64;
/** Most segments in a `path`. */
export const MAX_PATH_SEGMENTS = 32;

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

const pathSchema = z
  .string()
  .min(1, 'must not be empty')
  .refine(
    (path) => parsePath(path) !== undefined,
    'must be a dot path such as "pull_request.number" or "items[0].id"',
  )
  .refine(
    (path) => (parsePath(path)?.length ?? 0) <= MAX_PATH_SEGMENTS,
    `must have at most ${MAX_PATH_SEGMENTS} segments`,
  );

/**
 * A pattern that compiles, is at most MAX_PATTERN_LENGTH long, and has no nested quantifier
 * (`(a+)+`, `(a*)*`: star height above one, the shape of catastrophic backtracking).
 */
const patternSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_PATTERN_LENGTH, `must be at most ${MAX_PATTERN_LENGTH} characters`)
  .superRefine((pattern, ctx) => {
    try {
      new RegExp(pattern, 'u');
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `is not a valid regular expression: ${(error as Error).message}`,
      });
      return;
    }
    if (!safeRegex(pattern)) {
      ctx.addIssue({
        code: 'custom',
        message: 'may backtrack catastrophically (a quantifier inside a quantified group); rewrite it',
      });
    }
  });

const tests = {
  equals: scalar.optional(),
  in: z.array(scalar).min(1).max(64).optional(),
  exists: z.boolean().optional(),
  matches: patternSchema.optional(),
};

const TEST_NAMES = ['equals', 'in', 'exists', 'matches'] as const;

/** Exactly one test per leaf: two would leave the reader guessing whether both must hold. */
function oneTest(leaf: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const given = TEST_NAMES.filter((name) => leaf[name] !== undefined);
  if (given.length !== 1) {
    ctx.addIssue({ code: 'custom', message: `needs exactly one of ${TEST_NAMES.join(', ')}` });
  }
}

const pathLeaf = z.strictObject({ path: pathSchema, ...tests }).superRefine(oneTest);
const headerLeaf = z
  .strictObject({ header: z.string().regex(/^[A-Za-z0-9-]+$/, 'must be a header name'), ...tests })
  .superRefine(oneTest);

export type FilterLeaf = z.infer<typeof pathLeaf> | z.infer<typeof headerLeaf>;
export type Filter = FilterLeaf | { all: Filter[] } | { any: Filter[] } | { not: Filter };

export const filterSchema: z.ZodType<Filter> = z.lazy(() =>
  z.union([
    pathLeaf,
    headerLeaf,
    z.strictObject({ all: z.array(filterSchema).min(1) }),
    z.strictObject({ any: z.array(filterSchema).min(1) }),
    z.strictObject({ not: filterSchema }),
  ]),
);

/** The filter's depth and size within bounds (a zod refinement of the whole tree). */
export const boundedFilterSchema = filterSchema.superRefine((filter, ctx) => {
  const { depth, conditions } = measure(filter);
  if (depth > MAX_FILTER_DEPTH) {
    ctx.addIssue({ code: 'custom', message: `nests all/any/not ${depth} deep; at most ${MAX_FILTER_DEPTH}` });
  }
  if (conditions > MAX_FILTER_CONDITIONS) {
    ctx.addIssue({
      code: 'custom',
      message: `has ${conditions} conditions; at most ${MAX_FILTER_CONDITIONS}`,
    });
  }
});

function measure(filter: Filter): { depth: number; conditions: number } {
  const children =
    'all' in filter ? filter.all : 'any' in filter ? filter.any : 'not' in filter ? [filter.not] : [];
  if (children.length === 0) return { depth: 0, conditions: 1 };
  const measured = children.map(measure);
  return {
    depth: 1 + Math.max(...measured.map((m) => m.depth)),
    conditions: measured.reduce((sum, m) => sum + m.conditions, 0),
  };
}
