/**
 * References in every string value of a parsed config tree (docs/configuration.md,
 * "References"):
 *
 * - `${ENV_NAME}`: the environment variable's value; unset is a problem.
 * - `${file:/absolute/path}`: the file's content, one trailing newline (`\n` or `\r\n`) removed,
 *   for secrets mounted as files (Docker and Kubernetes secrets, systemd credentials). The path
 *   may itself hold `${ENV_NAME}` references (`${file:${CREDENTIALS_DIRECTORY}/hook-token}`), and
 *   must be absolute once they are substituted. A missing or unreadable file is a problem naming
 *   the path and the error code, never the content.
 *
 * Like `${ENV}`, a file reference may be part of a longer string. `$${…}` stands for the
 * literal text `${…}`. What a reference brings in is never read again for references.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { isAbsolute } from 'node:path';

const NAME = '[A-Za-z_][A-Za-z0-9_]*';
/** `$${…}` (escaped) or `${NAME}` or `${file:PATH}`, PATH up to the `}` that is not an env reference's own. */
const REFERENCE = new RegExp(`\\$(\\$?)\\{(?:(${NAME})|file:((?:\\$\\{${NAME}\\}|[^}])*))\\}`, 'g');
const ENV_IN_PATH = new RegExp(`\\$\\{(${NAME})\\}`, 'g');

/** Largest file a `${file:}` reference reads: a secret, not a data set. */
export const MAX_SECRET_FILE_BYTES = 1024 * 1024;

export interface SubstitutionProblem {
  path: string;
  message: string;
}

/** A key whose value came (wholly or in part) from a file, for doctor's mode check. */
export interface SecretFileRef {
  keyPath: string;
  file: string;
}

/** The content of a referenced file, or the code of the reason it cannot be read (ENOENT, EACCES, …). */
export type SecretFileReader = (file: string) => { ok: true; text: string } | { ok: false; reason: string };

export interface Substituted {
  value: unknown;
  problems: SubstitutionProblem[];
  /** Every `${file:}` reference that resolved to an absolute path, in tree order (read or not). */
  files: SecretFileRef[];
}

export function substituteReferences(
  tree: unknown,
  env: NodeJS.ProcessEnv,
  readFile: SecretFileReader = readSecretFile,
): Substituted {
  const problems: SubstitutionProblem[] = [];
  const files: SecretFileRef[] = [];

  const inString = (text: string, path: string): string =>
    text.replace(REFERENCE, (whole, escaped: string, name: string | undefined, file: string | undefined) => {
      if (escaped) return whole.slice(1);
      if (name !== undefined) {
        const found = env[name];
        if (found === undefined) {
          problems.push({ path, message: `environment variable ${name} is not set` });
          return '';
        }
        return found;
      }
      return fileContent(file as string, path);
    });

  const fileContent = (reference: string, path: string): string => {
    let unset = false;
    const file = reference.replace(ENV_IN_PATH, (_whole, name: string) => {
      const found = env[name];
      if (found === undefined) {
        problems.push({ path, message: `environment variable ${name} is not set` });
        unset = true;
        return '';
      }
      return found;
    });
    if (unset) return '';
    if (!isAbsolute(file)) {
      problems.push({
        path,
        message: `\${file:${file}}: the file path must be absolute (it starts with "/")`,
      });
      return '';
    }
    files.push({ keyPath: path, file });
    const read = readFile(file);
    if (!read.ok) {
      problems.push({ path, message: `cannot read ${file}: ${read.reason}` });
      return '';
    }
    return read.text;
  };

  const walk = (value: unknown, path: string): unknown => {
    if (typeof value === 'string') return inString(value, path);
    if (Array.isArray(value)) return value.map((item, index) => walk(item, `${path}[${index}]`));
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) out[key] = walk(item, path ? `${path}.${key}` : key);
      return out;
    }
    return value;
  };

  return { value: walk(tree, ''), problems, files };
}

/**
 * Reads a secret file as UTF-8, without its one trailing newline. Only a regular file is read
 * (a FIFO or a device could block or never end); opened non-blocking so a FIFO is refused at once.
 * The limit holds for what is read, not for what `stat` says: a `/proc` file is a regular file
 * of size 0 whatever it holds, so reading stops past the limit, and what is past refuses it.
 */
export function readSecretFile(file: string): { ok: true; text: string } | { ok: false; reason: string } {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    return { ok: false, reason: errorCode(error) };
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) return { ok: false, reason: 'EISDIR' };
    if (!stat.isFile()) return { ok: false, reason: 'not a regular file' };
    if (stat.size > MAX_SECRET_FILE_BYTES) {
      return { ok: false, reason: `larger than ${MAX_SECRET_FILE_BYTES} bytes` };
    }
    const content = readWithin(fd, MAX_SECRET_FILE_BYTES);
    if (content === undefined) return { ok: false, reason: `larger than ${MAX_SECRET_FILE_BYTES} bytes` };
    return { ok: true, text: withoutTrailingNewline(content.toString('utf8')) };
  } catch (error) {
    return { ok: false, reason: errorCode(error) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads are asked for in chunks of this size: some `/proc` files refuse a read of an odd
 * length (EINVAL), and the limit is a multiple of it.
 */
const READ_CHUNK_BYTES = 64 * 1024;

/**
 * `fd`'s content if it ends within `limit` bytes, else undefined. What is read past the
 * limit is at most one chunk: a file that never ends costs one read more than the limit.
 */
function readWithin(fd: number, limit: number): Buffer | undefined {
  const buffer = Buffer.alloc(limit + READ_CHUNK_BYTES);
  let filled = 0;
  while (filled <= limit) {
    const read = readSync(fd, buffer, filled, READ_CHUNK_BYTES, null);
    if (read === 0) return buffer.subarray(0, filled);
    filled += read;
  }
  return undefined;
}

/** One trailing `\n` or `\r\n` off: what `echo secret > file` and most editors add. */
export function withoutTrailingNewline(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  if (text.endsWith('\n')) return text.slice(0, -1);
  return text;
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? 'unreadable';
}
