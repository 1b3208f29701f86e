/**
 * Paths into untrusted JSON (`a.b[0].c`), as templates, filters and `dedupe` read them
 * (docs/mappings.md, "Templates"): a walk follows own properties only and never steps into
 * `__proto__`, `constructor` or `prototype`, so a path can never reach something that is not
 * actually in the request.
 */

/** Segments that would reach the prototype chain: never followed, whatever the data holds. */
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

// A path is names (anything but `.`, `[`, `]`) joined by dots, with `[n]` indexes anywhere.
// Names may contain `-`, so `headers.x-github-event` needs no special syntax.
const PATH_SHAPE = /^(?:[^.[\]]+|\[\d+\])(?:\.[^.[\]]+|\[\d+\])*$/;
const SEGMENT = /[^.[\]]+|\[(\d+)\]/g;

/** Splits `a.b[0].c` into `['a', 'b', '0', 'c']`; undefined when malformed. */
export function parsePath(expression: string): string[] | undefined {
  if (!PATH_SHAPE.test(expression)) return undefined;
  return Array.from(expression.matchAll(SEGMENT), (m) => m[1] ?? m[0]);
}

export function walk(root: unknown, segments: readonly string[]): unknown {
  let current = root;
  for (const segment of segments) {
    if (FORBIDDEN.has(segment)) return undefined;
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/** `lookupPath(obj, 'a.b[0].c')` → the value, or undefined when absent, unreachable or malformed. */
export function lookupPath(root: unknown, expression: string): unknown {
  const segments = parsePath(expression.trim());
  return segments ? walk(root, segments) : undefined;
}
