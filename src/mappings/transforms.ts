/**
 * Mapping transforms (docs/transforms.md): operator-written JS/TS modules that turn a
 * webhook request into a partial action.
 *
 * A transform never runs in the gateway's thread. Each one gets a small pool of
 * worker threads (transform-pool.ts) that import it once and serve calls by
 * message passing, so a runaway transform — a synchronous loop, a timer that
 * never stops, process.exit, a heap bomb — is stopped by terminating its
 * worker, and costs one request a 500 instead of freezing the gateway.
 *
 * Startup already refuses transforms that escape the transforms directory
 * (src/config/semantics.ts); loading checks again, after following symlinks,
 * because the file system can change between startup and the first request and
 * because importing a module runs its code.
 */
import { realpath, stat } from 'node:fs/promises';
import { extname, isAbsolute, resolve, win32 } from 'node:path';
import { isInside } from '../config/paths.js';
import { TransformError } from './transform-action.js';
import { isTransformExtension } from './transform-module.js';
import { type TransformLimits, TransformPool } from './transform-pool.js';

export {
  type TransformAction,
  TransformError,
  type TransformFn,
  type TransformInput,
  TransformTimeoutError,
  validateAction,
} from './transform-action.js';
export {
  DEFAULT_TRANSFORM_LIMITS,
  TRANSFORM_TIMEOUT_MS,
  type TransformLimits,
  TransformPool,
} from './transform-pool.js';

/**
 * Checks the module's path, then starts its worker pool; resolves once the first
 * worker has imported the module, so a broken transform fails at start or reload.
 * The caller owns the pool: `retire()` it on reload, `terminate()` it on shutdown.
 */
export async function loadTransform(
  options: {
    transformsRoot: string;
    transformsDir: string;
    module: string;
    exportName?: string;
  },
  limits: Partial<TransformLimits> = {},
): Promise<TransformPool> {
  const { module, exportName } = options;
  const fail = (why: string, cause?: unknown): never => {
    throw new TransformError(`transform "${module}": ${why}`, cause === undefined ? undefined : { cause });
  };
  const file = await containedFile(options, fail);
  if (!isTransformExtension(file)) {
    return fail(`unsupported extension "${extname(file).toLowerCase()}" (use .js, .mjs, .cjs, .ts or .mts)`);
  }
  return TransformPool.start({ file, module, exportName }, limits);
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
