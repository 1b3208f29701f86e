/**
 * A mapping's filter, compiled once when the config loads (docs/mappings.md, "Filters"): a
 * request passes or not. Patterns are compiled once here; values are read with the same
 * own-properties-only walk as templates, and a header by its lower-case name (Node's).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { parsePath, walk } from '../util/json-path.js';
import type { Filter, FilterLeaf } from './schema.js';

export interface FilteredRequest {
  payload: unknown;
  headers: IncomingHttpHeaders;
}

export type FilterCheck = (request: FilteredRequest) => boolean;

export function compileFilter(filter: Filter): FilterCheck {
  if ('all' in filter) {
    const parts = filter.all.map(compileFilter);
    return (request) => parts.every((part) => part(request));
  }
  if ('any' in filter) {
    const parts = filter.any.map(compileFilter);
    return (request) => parts.some((part) => part(request));
  }
  if ('not' in filter) {
    const inner = compileFilter(filter.not);
    return (request) => !inner(request);
  }
  return compileLeaf(filter);
}

function compileLeaf(leaf: FilterLeaf): FilterCheck {
  const read = 'path' in leaf ? pathReader(leaf.path) : headerReader(leaf.header);
  const test = valueTest(leaf);
  return (request) => test(read(request));
}

function pathReader(path: string): (request: FilteredRequest) => unknown {
  const segments = parsePath(path) ?? [];
  return ({ payload }) => walk(payload, segments);
}

/** A header sent more than once is read as its copies joined, as Node joins most headers. */
function headerReader(header: string): (request: FilteredRequest) => unknown {
  const name = header.toLowerCase();
  return ({ headers }) => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
}

function valueTest(leaf: FilterLeaf): (value: unknown) => boolean {
  if (leaf.exists !== undefined) {
    const wanted = leaf.exists;
    return (value) => (value !== undefined) === wanted;
  }
  if (leaf.in !== undefined) {
    const allowed = leaf.in;
    return (value) => allowed.some((one) => one === value);
  }
  if (leaf.matches !== undefined) {
    const pattern = new RegExp(leaf.matches, 'u');
    // Only strings are matched: a number or an object is not text the pattern was written for.
    return (value) => typeof value === 'string' && pattern.test(value);
  }
  const expected = leaf.equals;
  return (value) => value === expected;
}
