/**
 * Importing a transform module and picking its function. This runs inside a
 * transform worker (transform-worker.ts), never in the gateway's thread: a
 * module's top-level code runs on import, and it must be as stoppable as the
 * function it exports. The path arrives already checked for containment.
 */
import { extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TransformError, type TransformFn } from './transform-action.js';

const JS_EXTENSIONS = new Set(['.js', '.mjs', '.cjs']);
const TS_EXTENSIONS = new Set(['.ts', '.mts']);

/** True when `file` has an extension this loader can import. */
export function isTransformExtension(file: string): boolean {
  const ext = extname(file).toLowerCase();
  return JS_EXTENSIONS.has(ext) || TS_EXTENSIONS.has(ext);
}

/** Imports `file` (a real, contained path) and returns the chosen export; TransformError names `module`. */
export async function importTransformModule(
  file: string,
  module: string,
  exportName: string | undefined,
): Promise<TransformFn> {
  const fail = (why: string, cause?: unknown): never => {
    throw new TransformError(`transform "${module}": ${why}`, cause === undefined ? undefined : { cause });
  };
  const ext = extname(file).toLowerCase();
  let namespace: Record<string, unknown>;
  try {
    // Each worker has its own module cache, so an edited file is read afresh by the
    // next worker without cache-busting tricks.
    namespace = TS_EXTENSIONS.has(ext)
      ? await importTypeScript(file)
      : await import(pathToFileURL(file).href);
  } catch (err) {
    return fail(`failed to load: ${err instanceof Error ? err.message : String(err)}`, err);
  }
  return pickExport(namespace, exportName, fail);
}

/**
 * `.ts` / `.mts` go through tsx's scoped `tsImport`: it compiles only this import
 * (and what it imports) without a process-wide `--import tsx` flag. Loaded lazily
 * so workers of JS transforms never pay for esbuild.
 */
async function importTypeScript(file: string): Promise<Record<string, unknown>> {
  const { tsImport } = await import('tsx/esm/api');
  // tsconfig: false — the transform must not depend on whichever tsconfig the cwd happens to hold.
  return tsImport(pathToFileURL(file).href, { parentURL: import.meta.url, tsconfig: false });
}

function pickExport(
  namespace: Record<string, unknown>,
  exportName: string | undefined,
  fail: (why: string) => never,
): TransformFn {
  // CommonJS modules (a `.cjs`, or a `.ts` that tsx compiles as CommonJS because no
  // package.json says "module") arrive as `{ default: module.exports }` and Node's
  // named-export detection misses `module.exports = { transform: ... }`: look there too.
  const cjs = namespace.default;
  const scopes = [
    namespace,
    ...(typeof cjs === 'object' && cjs !== null ? [cjs as Record<string, unknown>] : []),
  ];
  const find = (name: string): unknown => {
    for (const scope of scopes) if (Object.hasOwn(scope, name)) return scope[name];
    return undefined;
  };
  if (exportName !== undefined) {
    const value = find(exportName);
    if (typeof value !== 'function') {
      return fail(`export "${exportName}" is ${value === undefined ? 'missing' : 'not a function'}`);
    }
    return value as TransformFn;
  }
  // `default`, then `transform` (docs/mappings.md, "Transforms").
  for (const name of ['default', 'transform']) {
    for (const scope of scopes) {
      const value = Object.hasOwn(scope, name) ? scope[name] : undefined;
      if (typeof value === 'function') return value as TransformFn;
    }
  }
  return fail('exports neither a default function nor a function named "transform"');
}
