/**
 * Mapping templates (docs/mappings.md, "Templates"): `{{expr}}` placeholders filled from the request.
 *
 * Templates come from the operator's config but the values come from untrusted
 * webhook payloads, so lookups only follow own properties and never walk into
 * `__proto__` / `constructor` / `prototype` — a template can never read (or be
 * tricked into rendering) something that is not actually in the request.
 */

import { parsePath, walk } from '../util/json-path.js';

export { lookupPath } from '../util/json-path.js';

export interface TemplateContext {
  payload: unknown;
  /** Lower-case header names, as Node delivers them. */
  headers: Record<string, string | string[] | undefined>;
  query: Record<string, unknown>;
  /** The hook name after `hooks.path`. */
  path: string;
  now: Date;
}

type Part = string | ((ctx: TemplateContext) => string);

function stringify(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (typeof value === 'object') {
    try {
      return JSON.stringify(value) ?? '';
    } catch {
      return ''; // cyclic or otherwise unserialisable: render nothing rather than fail the hook
    }
  }
  return ''; // functions, symbols
}

/** Builds the getter for one `{{expr}}` once, so rendering is just a walk. */
function compileExpression(expression: string): (ctx: TemplateContext) => string {
  const segments = parsePath(expression);
  if (!segments || segments.length === 0) return () => '';
  const [head, ...rest] = segments as [string, ...string[]];
  switch (head) {
    case 'payload':
      return (ctx) => stringify(walk(ctx.payload, rest));
    case 'headers': {
      // Exactly one name; a repeated header renders the way HTTP would fold it.
      if (rest.length !== 1) return () => '';
      const name = (rest[0] as string).toLowerCase();
      return (ctx) => {
        const value = walk(ctx.headers, [name]);
        return Array.isArray(value) ? value.map(stringify).join(', ') : stringify(value);
      };
    }
    case 'query':
      // Bare `query` renders nothing rather than the whole query string object.
      return rest.length === 0 ? () => '' : (ctx) => stringify(walk(ctx.query, rest));
    case 'path':
      return rest.length === 0 ? (ctx) => ctx.path : () => '';
    case 'now':
      return rest.length === 0 ? (ctx) => ctx.now.toISOString() : () => '';
    default:
      // Bare names look into the payload (`{{a.b}}` is `{{payload.a.b}}`).
      return (ctx) => stringify(walk(ctx.payload, segments));
  }
}

/** Pre-compiles a template into literal and lookup parts; call the result per request. */
export function compileTemplate(template: string): (ctx: TemplateContext) => string {
  const parts: Part[] = [];
  let at = 0;
  while (at < template.length) {
    const open = template.indexOf('{{', at);
    const close = open === -1 ? -1 : template.indexOf('}}', open + 2);
    if (close === -1) {
      parts.push(template.slice(at)); // no (closed) placeholder left: the rest is literal text
      break;
    }
    if (open > at) parts.push(template.slice(at, open));
    parts.push(compileExpression(template.slice(open + 2, close).trim()));
    at = close + 2;
  }
  if (parts.every((p) => typeof p === 'string')) {
    const text = parts.join('');
    return () => text;
  }
  return (ctx) => {
    let out = '';
    for (const part of parts) out += typeof part === 'string' ? part : part(ctx);
    return out;
  };
}

// Compiled templates are reused: mappings render the same few templates on every request.
const cache = new Map<string, (ctx: TemplateContext) => string>();
const CACHE_LIMIT = 1000;

export function renderTemplate(template: string, ctx: TemplateContext): string {
  let compiled = cache.get(template);
  if (!compiled) {
    compiled = compileTemplate(template);
    if (cache.size >= CACHE_LIMIT) cache.clear(); // templates come from config; this only bounds misuse
    cache.set(template, compiled);
  }
  return compiled(ctx);
}
