/**
 * A mapping's filter (docs/mappings.md, "Filters"): each test and combinator, and what the
 * config refuses at load — hostile patterns, over-long ones, deep or wide trees, bad paths.
 */
import { describe, expect, it } from 'vitest';
import { compileFilter } from '../../src/filters/evaluate.js';
import { boundedFilterSchema, type Filter, MAX_PATTERN_LENGTH } from '../../src/filters/schema.js';

const PR = {
  payload: { action: 'opened', number: 7, draft: false, pull_request: { base: { ref: 'main' }, labels: [] } },
  headers: { 'x-github-event': 'pull_request' },
};

const passes = (filter: unknown, request = PR) => compileFilter(boundedFilterSchema.parse(filter))(request);
const problems = (filter: unknown) => {
  const parsed = boundedFilterSchema.safeParse(filter);
  return parsed.success ? [] : parsed.error.issues.map((issue) => issue.message);
};

describe('filter tests', () => {
  it('equals compares strictly: the string "7" is not the number 7', () => {
    expect(passes({ path: 'number', equals: 7 })).toBe(true);
    expect(passes({ path: 'number', equals: '7' })).toBe(false);
    expect(passes({ path: 'draft', equals: false })).toBe(true);
    expect(passes({ path: 'pull_request.base.ref', equals: 'main' })).toBe(true);
  });

  it('in, exists and matches', () => {
    expect(passes({ path: 'action', in: ['opened', 'reopened'] })).toBe(true);
    expect(passes({ path: 'action', in: ['closed'] })).toBe(false);
    expect(passes({ path: 'pull_request.labels', exists: true })).toBe(true);
    expect(passes({ path: 'pull_request.merged_by', exists: false })).toBe(true);
    expect(passes({ path: 'pull_request.base.ref', matches: '^(main|release/.+)$' })).toBe(true);
    // Only strings are matched.
    expect(passes({ path: 'number', matches: '7' })).toBe(false);
  });

  it('reads headers in any case, and never the prototype chain', () => {
    expect(passes({ header: 'X-GitHub-Event', equals: 'pull_request' })).toBe(true);
    expect(passes({ path: 'constructor', exists: true })).toBe(false);
    expect(passes({ path: '__proto__.polluted', exists: true })).toBe(false);
  });

  it('all, any and not', () => {
    const filter: Filter = {
      all: [
        { header: 'x-github-event', equals: 'pull_request' },
        {
          any: [
            { path: 'action', equals: 'opened' },
            { path: 'action', equals: 'reopened' },
          ],
        },
        { not: { path: 'draft', equals: true } },
      ],
    };
    expect(passes(filter)).toBe(true);
    expect(passes(filter, { ...PR, payload: { ...PR.payload, draft: true } })).toBe(false);
  });
});

describe('filters the config refuses', () => {
  it('a pattern that may backtrack catastrophically', () => {
    for (const pattern of ['(a+)+$', '(a*)*b', '^(\\w+\\s?)*$']) {
      expect(problems({ path: 'action', matches: pattern })).toEqual([
        'may backtrack catastrophically (a quantifier inside a quantified group); rewrite it',
      ]);
    }
  });

  it('a pattern over the length limit, or one that does not compile', () => {
    expect(problems({ path: 'a', matches: 'x'.repeat(MAX_PATTERN_LENGTH + 1) })).toEqual([
      `must be at most ${MAX_PATTERN_LENGTH} characters`,
    ]);
    expect(problems({ path: 'a', matches: '(' })[0]).toMatch(/^is not a valid regular expression/);
  });

  it('a leaf with no test or two, a malformed or over-deep path', () => {
    expect(problems({ path: 'a' }).join()).toMatch(/needs exactly one of equals, in, exists, matches/);
    expect(problems({ path: 'a', equals: 1, exists: true }).join()).toMatch(/needs exactly one/);
    expect(problems({ path: 'a..b', equals: 1 }).join()).toMatch(/must be a dot path/);
    expect(problems({ path: Array(33).fill('a').join('.'), equals: 1 }).join()).toMatch(
      /at most 32 segments/,
    );
  });

  it('a tree nested too deep or with too many conditions', () => {
    let deep: Filter = { path: 'a', exists: true };
    for (let i = 0; i < 9; i++) deep = { not: deep };
    expect(problems(deep)).toEqual(['nests all/any/not 9 deep; at most 8']);
    const wide = { any: Array.from({ length: 65 }, (_, i) => ({ path: 'n', equals: i })) };
    expect(problems(wide)).toEqual(['has 65 conditions; at most 64']);
  });
});
