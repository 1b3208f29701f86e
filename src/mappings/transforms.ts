/**
 * Mapping transforms (CONTRACT §7): operator-written JS/TS modules that turn a
 * webhook request into a partial action.
 *
 * Startup already refuses transforms that escape the transforms directory
 * (src/config/semantics.ts); loading checks again, after following symlinks,
 * because the file system can change between startup and the first request and
 * because importing a module runs its code with the gateway's privileges.
 */
import { realpath, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { extname, isAbsolute, resolve, win32 } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isInside } from '../config/paths.js';

export interface TransformInput {
  payload: unknown;
  headers: Record<string, string | string[] | undefined>;
  query: Record<string, unknown>;
  path: string;
  url: string;
}

export interface TransformAction {
  kind?: 'agent' | 'wake';
  message?: string;
  text?: string;
  name?: string;
  sessionKey?: string;
  agentId?: string;
  wakeMode?: string;
  deliver?: boolean;
  channel?: string;
  to?: string;
  model?: string;
  thinking?: string;
  timeoutSeconds?: number;
}

export type TransformFn = (input: TransformInput) => TransformAction | null | Promise<TransformAction | null>;

/** A transform that cannot be loaded, or returned something that is not an action. */
export class TransformError extends Error {
  override name = 'TransformError';
}

/** A transform that did not settle in time. */
export class TransformTimeoutError extends Error {
  override name = 'TransformTimeoutError';
}

export const TRANSFORM_TIMEOUT_MS = 5000;

const JS_EXTENSIONS = new Set(['.js', '.mjs', '.cjs']);
const TS_EXTENSIONS = new Set(['.ts', '.mts']);

export async function loadTransform(options: {
  transformsRoot: string;
  transformsDir: string;
  module: string;
  exportName?: string;
}): Promise<TransformFn> {
  const { module, exportName } = options;
  const fail = (why: string, cause?: unknown): never => {
    throw new TransformError(`transform "${module}": ${why}`, cause === undefined ? undefined : { cause });
  };

  const file = await containedFile(options, fail);
  const ext = extname(file).toLowerCase();
  let namespace: Record<string, unknown>;
  try {
    if (JS_EXTENSIONS.has(ext)) {
      namespace = await import(/* @vite-ignore */ await versionedUrl(file));
    } else if (TS_EXTENSIONS.has(ext)) {
      namespace = await importTypeScript(file);
    } else {
      return fail(`unsupported extension "${ext}" (use .js, .mjs, .cjs, .ts or .mts)`);
    }
  } catch (err) {
    if (err instanceof TransformError) throw err;
    return fail(`failed to load: ${err instanceof Error ? err.message : String(err)}`, err);
  }
  return pickExport(namespace, exportName, fail);
}

/** Resolves `module` and proves it stays inside the transforms dir and root, symlinks followed. */
async function containedFile(
  options: { transformsRoot: string; transformsDir: string; module: string },
  fail: (why: string, cause?: unknown) => never,
): Promise<string> {
  const { module } = options;
  // Both POSIX and Windows absolute forms: a config written on one may run on the other.
  if (module === '' || isAbsolute(module) || win32.isAbsolute(module)) {
    return fail('must be a path relative to the transforms directory');
  }
  if (module.split(/[\\/]/).includes('..')) return fail('must not contain ".." segments');

  const root = resolve(options.transformsRoot);
  const dir = resolve(options.transformsDir);
  if (!isInside(root, dir)) return fail(`transforms directory ${dir} is outside the transforms root ${root}`);
  const target = resolve(dir, module);
  if (!isInside(dir, target)) return fail(`resolves outside the transforms directory ${dir}`);

  let real: string;
  let realRoot: string;
  let realDir: string;
  try {
    [real, realRoot, realDir] = await Promise.all([realpath(target), realpath(root), realpath(dir)]);
  } catch (err) {
    return fail(`file not found: ${target}`, err);
  }
  // A symlink (the file itself or any folder on the way) must not lead out of the tree.
  if (!isInside(realRoot, real) || !isInside(realDir, real)) {
    return fail(`resolves (through a symlink) outside the transforms directory ${dir}`);
  }
  if (!(await stat(real)).isFile()) return fail(`not a file: ${target}`);
  // Import the resolved path, so a symlink swapped after this check is not followed.
  return real;
}

/**
 * Node caches modules by URL for the life of the process, so a config reload would
 * keep running the old code of an edited transform. The file's mtime and size in the
 * query make an edited file a new module, while an unchanged one still hits the cache
 * (so reloads do not pile up copies of the same module).
 */
async function versionedUrl(file: string): Promise<string> {
  // CommonJS (`.cjs`, or a `.js` without "type": "module") is also cached by file name in
  // require.cache, which Node's import() consults: drop it so the new version is read.
  delete createRequire(import.meta.url).cache[file];
  const { mtimeMs, size } = await stat(file);
  const url = pathToFileURL(file);
  url.searchParams.set('v', `${mtimeMs}-${size}`);
  return url.href;
}

/**
 * `.ts` / `.mts` go through tsx's scoped `tsImport`: it compiles only this import
 * (and what it imports) without a process-wide `--import tsx` flag. Loaded lazily
 * so gateways without TS transforms never pay for esbuild.
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
  // CONTRACT §7: `default`, then `transform`.
  for (const name of ['default', 'transform']) {
    for (const scope of scopes) {
      const value = Object.hasOwn(scope, name) ? scope[name] : undefined;
      if (typeof value === 'function') return value as TransformFn;
    }
  }
  return fail('exports neither a default function nor a function named "transform"');
}

/**
 * Calls the transform and validates what it returns. A thrown error propagates
 * unchanged (the caller logs it and answers 500 mapping_failed). Only an
 * asynchronous hang can be cut off: a synchronous busy loop blocks the event loop.
 */
export async function runTransform(
  fn: TransformFn,
  input: TransformInput,
  timeoutMs: number,
): Promise<TransformAction | null> {
  // The timer is cleared as soon as the race settles, so it never outlives the call. It is
  // deliberately not unref'd: while we wait, it is the one thing guaranteed to wake us up.
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TransformTimeoutError(`transform did not finish within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    const result = await Promise.race([Promise.resolve().then(() => fn(input)), timeout]);
    return validateAction(result);
  } finally {
    clearTimeout(timer);
  }
}

const STRING_FIELDS = [
  'message',
  'text',
  'name',
  'sessionKey',
  'agentId',
  'wakeMode',
  'channel',
  'to',
  'model',
  'thinking',
] as const;

/** null/undefined → skip; a plain object → the known, well-typed fields; anything else → error. */
export function validateAction(result: unknown): TransformAction | null {
  if (result === null || result === undefined) return null;
  if (typeof result !== 'object' || Array.isArray(result)) {
    throw new TransformError(`transform result must be an object or null, got ${describe(result)}`);
  }
  const proto = Object.getPrototypeOf(result);
  if (proto !== Object.prototype && proto !== null) {
    throw new TransformError(`transform result must be a plain object, got ${describe(result)}`);
  }
  const source = result as Record<string, unknown>;
  // Own properties only, copied into a fresh object: unknown fields are dropped.
  const get = (field: string): unknown => (Object.hasOwn(source, field) ? source[field] : undefined);
  const action: TransformAction = {};
  const wrong = (field: string, expected: string, value: unknown): never => {
    throw new TransformError(`transform result field "${field}" must be ${expected}, got ${describe(value)}`);
  };

  const kind = get('kind');
  if (kind !== undefined) {
    if (kind !== 'agent' && kind !== 'wake') wrong('kind', '"agent" or "wake"', kind);
    action.kind = kind as 'agent' | 'wake';
  }
  for (const field of STRING_FIELDS) {
    const value = get(field);
    if (value === undefined) continue;
    if (typeof value !== 'string') wrong(field, 'a string', value);
    action[field] = value as string;
  }
  const deliver = get('deliver');
  if (deliver !== undefined) {
    if (typeof deliver !== 'boolean') wrong('deliver', 'a boolean', deliver);
    action.deliver = deliver as boolean;
  }
  const timeoutSeconds = get('timeoutSeconds');
  if (timeoutSeconds !== undefined) {
    if (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds)) {
      wrong('timeoutSeconds', 'a finite number', timeoutSeconds);
    }
    action.timeoutSeconds = timeoutSeconds as number;
  }
  return action;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    return proto === Object.prototype || proto === null
      ? 'an object'
      : `an instance of ${proto.constructor?.name}`;
  }
  return `${typeof value} ${String(value)}`;
}
