// biome-ignore-all lint/suspicious/noTemplateCurlyInString: config files hold literal ${…} references
/**
 * `${file:/absolute/path}` references (src/config/env.ts; docs/configuration.md,
 * "Secrets in files"): the content with one trailing newline removed, inside a longer
 * string too, env references inside the path, `$${file:…}` literal, and every way a
 * reference fails — relative path, missing or unreadable file, a folder, a FIFO, a file
 * past 1 MiB whatever its size says (/proc), an unset variable in the path — each named by key path, file path and reason, never the
 * content. The loader lists which keys came from which files.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  MAX_SECRET_FILE_BYTES,
  readSecretFile,
  substituteReferences,
  withoutTrailingNewline,
} from '../../src/config/env.js';
import { type LoadResult, loadConfigFile } from '../../src/config/load.js';
import { tempDir } from '../helpers/gateway.js';

const HOOK = 'hook-token-from-a-file-0123456789abcdef';
const ADMIN = 'admin-token-0123456789abcdef012345678';

let dir: string;
beforeEach(() => {
  dir = tempDir('agentgate-file-ref-');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function secret(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
}

function load(config: unknown, env: NodeJS.ProcessEnv = {}): LoadResult {
  const path = join(dir, 'agentgate.json5');
  writeFileSync(path, JSON.stringify(config, null, 2));
  return loadConfigFile(path, env);
}

function problemsOf(result: LoadResult): string[] {
  if (result.ok) throw new Error('expected problems, but the config was accepted');
  return result.problems;
}

describe('${file:} substitution', () => {
  it('brings in the file content without its one trailing newline, and lists the key and file', () => {
    const hook = secret('hook-token', `${HOOK}\n`);
    const admin = secret('admin-token', `${ADMIN}\r\n`);
    const result = load({
      gateway: { auth: { token: `\${file:${admin}}` } },
      hooks: { enabled: true, token: `\${file:${hook}}` },
    });
    if (!result.ok) throw new Error(result.problems.join('\n'));
    expect(result.config.hooks.token).toBe(HOOK);
    expect(result.config.gateway.auth.token).toBe(ADMIN);
    expect(result.config.hooks.tokens[0]).toMatchObject({ id: 'default', token: HOOK });
    expect(result.secretFiles).toEqual([
      { keyPath: 'gateway.auth.token', file: admin },
      { keyPath: 'hooks.token', file: hook },
    ]);
  });

  it('removes only one newline, and keeps inner newlines and spaces', () => {
    expect(withoutTrailingNewline('a\n\n')).toBe('a\n');
    expect(withoutTrailingNewline('a\r\n\r\n')).toBe('a\r\n');
    expect(withoutTrailingNewline(' a b \n')).toBe(' a b ');
    expect(withoutTrailingNewline('a\r')).toBe('a\r');
    expect(withoutTrailingNewline('')).toBe('');
  });

  it('works inside a longer string and inside arrays, next to ${ENV} references', () => {
    const part = secret('part', 'middle\n');
    const { value, problems, files } = substituteReferences(
      { a: { b: [`x-\${file:${part}}-\${SUFFIX}`, 'plain'] } },
      { SUFFIX: 'end' },
    );
    expect(problems).toEqual([]);
    expect(value).toEqual({ a: { b: ['x-middle-end', 'plain'] } });
    expect(files).toEqual([{ keyPath: 'a.b[0]', file: part }]);
  });

  it('substitutes ${ENV} inside the path ($CREDENTIALS_DIRECTORY)', () => {
    mkdirSync(join(dir, 'creds'));
    const file = secret('creds/hook-token', HOOK);
    const { value, problems, files } = substituteReferences(
      { token: '${file:${CREDENTIALS_DIRECTORY}/hook-token}' },
      { CREDENTIALS_DIRECTORY: join(dir, 'creds') },
    );
    expect(problems).toEqual([]);
    expect(value).toEqual({ token: HOOK });
    expect(files).toEqual([{ keyPath: 'token', file }]);
  });

  it('an unset variable in the path is a problem, and no file is read', () => {
    let reads = 0;
    const { value, problems, files } = substituteReferences(
      { token: '${file:${CREDENTIALS_DIRECTORY}/hook-token}' },
      {},
      () => {
        reads++;
        return { ok: true, text: 'x' };
      },
    );
    expect(problems).toEqual([
      { path: 'token', message: 'environment variable CREDENTIALS_DIRECTORY is not set' },
    ]);
    expect(value).toEqual({ token: '' });
    expect(files).toEqual([]);
    expect(reads).toBe(0);
  });

  it('does not read references inside what a file or a variable brought in', () => {
    const inner = secret('inner', '${HOME}-${file:/etc/hostname}');
    const { value, problems } = substituteReferences(
      { a: `\${file:${inner}}`, b: '${V}' },
      { HOME: '/root', V: `\${file:${inner}}` },
    );
    expect(problems).toEqual([]);
    expect(value).toEqual({ a: '${HOME}-${file:/etc/hostname}', b: `\${file:${inner}}` });
  });

  it('treats $${file:…} as the literal text ${file:…}', () => {
    const { value, problems, files } = substituteReferences(
      { a: '$${file:/run/secrets/x} and $${file:${DIR}/y}' },
      {},
    );
    expect(problems).toEqual([]);
    expect(files).toEqual([]);
    expect(value).toEqual({ a: '${file:/run/secrets/x} and ${file:${DIR}/y}' });
  });

  it('a relative or empty path is a problem naming the key', () => {
    const problems = problemsOf(
      load({
        gateway: { auth: { token: '${file:run/secrets/admin}' } },
        hooks: { enabled: true, token: '${file:}' },
      }),
    );
    expect(problems).toContain(
      'gateway.auth.token: ${file:run/secrets/admin}: the file path must be absolute (it starts with "/")',
    );
    expect(problems).toContain('hooks.token: ${file:}: the file path must be absolute (it starts with "/")');
  });

  it('a missing file is a problem naming the key, the file and ENOENT', () => {
    const missing = join(dir, 'no-such-secret');
    const problems = problemsOf(load({ hooks: { enabled: true, token: `\${file:${missing}}` } }));
    expect(problems).toContain(`hooks.token: cannot read ${missing}: ENOENT`);
  });

  it('an unreadable file is named with its error code, never its content', () => {
    // Tests run as root, where mode 000 still reads: the reader stands in for the file system.
    const { problems, files } = substituteReferences(
      { hooks: { token: '${file:/run/secrets/hook}' } },
      {},
      () => ({
        ok: false,
        reason: 'EACCES',
      }),
    );
    expect(problems).toEqual([{ path: 'hooks.token', message: 'cannot read /run/secrets/hook: EACCES' }]);
    expect(files).toEqual([{ keyPath: 'hooks.token', file: '/run/secrets/hook' }]);
  });

  it('a folder, a FIFO and an oversized file are refused without reading them', () => {
    expect(readSecretFile(dir)).toEqual({ ok: false, reason: 'EISDIR' });
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(readSecretFile(fifo)).toEqual({ ok: false, reason: 'not a regular file' });
    const big = secret('big', 'x'.repeat(MAX_SECRET_FILE_BYTES + 1));
    expect(readSecretFile(big)).toEqual({ ok: false, reason: `larger than ${MAX_SECRET_FILE_BYTES} bytes` });
  });

  it('a file whose size stat reports as 0 (/proc) is read up to the limit and refused past it', async () => {
    // A process's environ is a regular file of size 0 whatever it holds: here 1.2 MiB.
    const env = Object.fromEntries(
      Array.from({ length: 12 }, (_, i) => [`BIG_${i}`, 'x'.repeat(100 * 1024)]),
    );
    const child = spawn('sleep', ['30'], { env });
    await once(child, 'spawn');
    try {
      const environ = `/proc/${child.pid}/environ`;
      expect(statSync(environ).size).toBe(0);
      expect(readSecretFile(environ)).toEqual({
        ok: false,
        reason: `larger than ${MAX_SECRET_FILE_BYTES} bytes`,
      });
      const problems = problemsOf(load({ hooks: { enabled: true, token: `\${file:${environ}}` } }));
      expect(problems).toContain(
        `hooks.token: cannot read ${environ}: larger than ${MAX_SECRET_FILE_BYTES} bytes`,
      );
    } finally {
      child.kill('SIGKILL');
    }
    // A size-0 file with no end in practice (this process's page map): refused after limit+1 bytes.
    expect(statSync('/proc/self/pagemap').size).toBe(0);
    expect(readSecretFile('/proc/self/pagemap')).toEqual({
      ok: false,
      reason: `larger than ${MAX_SECRET_FILE_BYTES} bytes`,
    });
    // Exactly the limit is still taken.
    const exact = readSecretFile(secret('exact', 'x'.repeat(MAX_SECRET_FILE_BYTES)));
    expect(exact.ok && exact.text.length).toBe(MAX_SECRET_FILE_BYTES);
    // Within the limit, a size-0 file is still read whole.
    expect(readSecretFile('/proc/self/cmdline')).toEqual({
      ok: true,
      text: withoutTrailingNewline(readFileSync('/proc/self/cmdline', 'utf8')),
    });
  });

  it('an empty file gives an empty value, which the schema refuses by key path', () => {
    const empty = secret('empty', '\n');
    const problems = problemsOf(load({ hooks: { enabled: true, token: `\${file:${empty}}` } }));
    expect(problems).toContain('hooks.token: must not be empty');
  });

  it('a problem never holds the content of a file that was read', () => {
    const content = 'tiny-secret';
    const file = secret('short', content);
    const result = load({ hooks: { enabled: true, token: `\${file:${file}}` } });
    const text = problemsOf(result).join('\n');
    expect(text).toContain('hooks.token: must be at least 16 characters');
    expect(text).not.toContain(content);
  });
});
