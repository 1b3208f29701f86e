/**
 * The nesting-depth scan of JSON bodies (src/util/json-depth.ts; docs/errors.md,
 * "Nesting depth"): exact at and around the limit, blind to brackets inside
 * strings whatever their escapes, linear on hostile text, and equal to a depth
 * computed from JSON.parse's output for random JSON (fast-check).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestedDeeperThan as scan } from '../../src/util/json-depth.js';

/** The scan of `text`'s UTF-8 bytes, as a body arrives. */
const nestedDeeperThan = (text: string, limit: number) => scan(Buffer.from(text), limit);

/** The reference: levels of arrays and objects of a parsed value (a scalar is 0). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce((deepest: number, child) => Math.max(deepest, depthOf(child)), 0);
}

/** The depth the scan sees: the least limit it does not exceed (limits from 0 to 1,000). */
function scannedDepth(text: string): number {
  let limit = 0;
  while (nestedDeeperThan(text, limit) && limit < 1000) limit++;
  return limit;
}

const arrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const objects = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
/** A body: an object around a value, one level more than the value's own. */
const inBody = (value: string) => `{"deep":${value}}`;

describe('nestedDeeperThan', () => {
  it.each([
    ['a number', '42', 0],
    ['a string', '"x"', 0],
    ['null', 'null', 0],
    ['an empty object', '{}', 1],
    ['an empty array', '[]', 1],
    ['an object holding an array', '{"a":[]}', 2],
    ['siblings: the deepest counts', '{"a":[1,[2]],"b":{"c":{"d":{}}}}', 4],
    ['arrays and objects mixed', '[{"a":[{"b":[]}]}]', 5],
    ['whitespace between the brackets', ' [ \n [\t[ ] ] , { } ] ', 3],
  ])('measures %s as %i levels', (_label, text, depth) => {
    expect(depthOf(JSON.parse(text))).toBe(depth);
    expect(scannedDepth(text)).toBe(depth);
  });

  it.each([
    ['arrays', arrays],
    ['objects', objects],
  ])('accepts %s exactly at the limit and refuses one level more', (_label, nest) => {
    expect(nestedDeeperThan(nest(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    expect(nestedDeeperThan(nest(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(true);
    expect(nestedDeeperThan(inBody(nest(MAX_JSON_DEPTH - 1)), MAX_JSON_DEPTH)).toBe(false);
    expect(nestedDeeperThan(inBody(nest(MAX_JSON_DEPTH)), MAX_JSON_DEPTH)).toBe(true);
  });

  it('the limit is at least 64 levels', () => {
    expect(MAX_JSON_DEPTH).toBeGreaterThanOrEqual(64);
  });

  it.each([
    ['brackets in a string', '{"a":"[[[[[[[[{{{{{{{{"}'],
    ['brackets after an escaped quote', '{"a":"\\"[[[[[[[[{{{{{{{{"}'],
    ['brackets between escaped quotes', '{"a":"\\"[[[[[[[[\\"{{{{{{{{\\""}'],
    ['brackets after escaped backslashes and a quote', '{"a":"\\\\\\"[[[[[[[[{{{{"}'],
    ['brackets in a key', '{"[[[[[[[[{{{{{{{{":1}'],
    ['brackets in many strings', '["[[[[","{{{{","[[[[","{{{{"]'],
    ['an escaped slash and unicode escapes', '{"a":"\\/[[[[\\u005b\\u007b[[[[{{{{"}'],
    ['non-ASCII text around brackets', '{"日本語":"😀[[[[[[[[{{{{{{{{ünïcødé"}'],
  ])('does not count %s', (_label, text) => {
    expect(depthOf(JSON.parse(text))).toBeLessThanOrEqual(1);
    expect(scannedDepth(text)).toBe(depthOf(JSON.parse(text)));
  });

  it('counts the brackets after a string that ends in an escaped backslash', () => {
    // `"\\"` is a whole string (one backslash): the brackets after it are structure.
    const text = `["\\\\",${arrays(3)}]`;
    expect(depthOf(JSON.parse(text))).toBe(4);
    expect(scannedDepth(text)).toBe(4);
    const backslashes = `["${'\\\\'.repeat(50)}",${arrays(3)}]`;
    expect(scannedDepth(backslashes)).toBe(4);
  });

  it('finds the end of strings of every length, escapes on either side of where indexOf takes over', () => {
    // The first bytes of a string are read one by one, the rest searched with indexOf.
    for (let before = 0; before <= 40; before++) {
      for (const tail of ['\\"', '\\\\', '\\\\\\"', 'x', '\\\\x', '[{']) {
        const inner = `${'a'.repeat(before)}${tail}${'b'.repeat(before % 7)}`;
        const text = `[${JSON.stringify(JSON.parse(`"${inner}"`))},"${inner}",${arrays(3)}]`;
        expect(depthOf(JSON.parse(text)), text).toBe(4);
        expect(scannedDepth(text), text).toBe(4);
      }
    }
  });

  it('reads a body that is a slice of a larger buffer from the slice only', () => {
    const whole = Buffer.from(`${arrays(10)}{"a":"${'['.repeat(10)}"}`);
    const slice = whole.subarray(20);
    expect(slice.toString()).toBe(`{"a":"${'['.repeat(10)}"}`);
    expect(scan(slice, 1)).toBe(false);
    expect(scan(whole.subarray(0, 20), 9)).toBe(true);
  });

  it('refuses 5,000 and 100,000 levels, of arrays and of objects, in linear time', () => {
    for (const depth of [5_000, 100_000]) {
      expect(nestedDeeperThan(arrays(depth), MAX_JSON_DEPTH)).toBe(true);
      expect(nestedDeeperThan(objects(depth), MAX_JSON_DEPTH)).toBe(true);
      expect(nestedDeeperThan(inBody(arrays(depth)), MAX_JSON_DEPTH)).toBe(true);
    }
    // Only openers, never closed (not JSON): refused as soon as the limit is passed.
    expect(nestedDeeperThan('['.repeat(1_000_000), MAX_JSON_DEPTH)).toBe(true);
  });

  it('stays linear on text made of escapes, quotes and brackets in strings', () => {
    const mib = 1 << 20;
    const hostile = [
      JSON.stringify({ a: '"'.repeat(mib / 2) }),
      JSON.stringify({ a: '\\'.repeat(mib / 2) }),
      JSON.stringify({ a: '[\\"{'.repeat(mib / 8) }),
      JSON.stringify(Array.from({ length: mib / 4 }, () => '[')),
    ];
    for (const text of hostile) {
      const started = performance.now();
      expect(nestedDeeperThan(text, MAX_JSON_DEPTH)).toBe(false);
      // ~1 ns a character when quiet; quadratic work would take minutes.
      expect(performance.now() - started).toBeLessThan(2_000);
    }
  });

  it('gives an answer without throwing for text that is not JSON', () => {
    for (const text of ['', '"', '"\\', '["abc', '[[[[', ']]]][[[[', '}{', '"\\\\\\', '[["\\"]]']) {
      expect(typeof nestedDeeperThan(text, 2)).toBe('boolean');
    }
  });

  describe('property: equals the depth of what JSON.parse builds (fast-check)', () => {
    /** Strings rich in what the scan must skip, and plain ones. */
    const tricky = fc.constantFrom('[', ']', '{', '}', '"', '\\', '/', 'a', ' ', '\n', '日', '😀', '\u2028');
    const json = fc.oneof(
      fc.jsonValue({ maxDepth: 8, stringUnit: tricky }),
      fc.jsonValue({ maxDepth: 8, stringUnit: 'grapheme' }),
    );
    /** A value wrapped in `levels` arrays or objects, each with random siblings (depth around the limit). */
    const wrapped = fc
      .tuple(
        json,
        fc.array(fc.tuple(fc.boolean(), json, fc.string({ unit: tricky, maxLength: 6 })), {
          maxLength: MAX_JSON_DEPTH + 10,
        }),
      )
      .map(([core, levels]) =>
        levels.reduce<unknown>(
          (inner, [asArray, sibling, key]) =>
            asArray ? [sibling, inner] : { [key]: sibling, [`${key}!`]: inner },
          core,
        ),
      );

    it('for random JSON values, compact and indented', () => {
      fc.assert(
        fc.property(json, fc.constantFrom(undefined, 1, 2, '\t'), (value, indent) => {
          const text = JSON.stringify(value, null, indent);
          expect(scannedDepth(text)).toBe(depthOf(JSON.parse(text)));
        }),
        { numRuns: 500 },
      );
    });

    it('for arrays of long strings made of quotes, backslashes and brackets', () => {
      const strings = fc.array(fc.string({ unit: tricky, maxLength: 80 }), { maxLength: 20 });
      fc.assert(
        fc.property(strings, fc.integer({ min: 0, max: 6 }), (list, nesting) => {
          let value: unknown = list;
          for (let level = 0; level < nesting; level++) value = [value, ...list];
          const text = JSON.stringify(value);
          expect(scannedDepth(text)).toBe(depthOf(JSON.parse(text)));
        }),
        { numRuns: 500 },
      );
    });

    it('for values nested around the limit, against any limit', () => {
      fc.assert(
        fc.property(wrapped, fc.integer({ min: 0, max: MAX_JSON_DEPTH + 20 }), (value, limit) => {
          const text = JSON.stringify(value);
          const depth = depthOf(JSON.parse(text));
          expect(nestedDeeperThan(text, limit)).toBe(depth > limit);
          expect(nestedDeeperThan(text, depth)).toBe(false);
          if (depth > 0) expect(nestedDeeperThan(text, depth - 1)).toBe(true);
        }),
        { numRuns: 300 },
      );
    });
  });
});
