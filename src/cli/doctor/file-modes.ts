/**
 * Who else on this host can read or change agentgate's files. The config holds
 * tokens and keys; the state directory holds the database (every message,
 * reply and transcript); the transforms directory holds code the gateway runs;
 * the Gmail credentials hold a refresh token. POSIX only (skipped on Windows).
 *
 * - config file, Gmail credentials: writable by group/others or readable by
 *   others → fail; readable by the group → warn (agentgate writes 0600);
 * - state dir: writable by group/others → fail; the database readable by others
 *   through a directory they can enter → fail; the directory open to the group
 *   or others at all → warn (agentgate creates it 0700 and the database 0600; a
 *   database made by an earlier version may be 0644, which the 0700 directory
 *   shields; see docs/operating.md, "The SQLite file");
 * - transforms dir: writable by group/others → fail (code injection); reading is fine;
 * - each file a `${file:}` reference reads (docs/configuration.md, "Secrets in files"): open
 *   to group or others at all → warn, naming the key it fills. Only a warning: Docker Swarm mounts
 *   secrets 0444 and Kubernetes 0644 by default, inside a container of one user.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { resolveConfigPath } from '../../config/paths.js';
import type { ConfigSource } from './config-source.js';
import { type CheckResult, fail, ok, warn } from './types.js';

export function fileModeChecks(source: ConfigSource): CheckResult[] {
  if (process.platform === 'win32' || !source.exists) return [];
  const checks: (CheckResult | undefined)[] = [secretFile('config file', source.path)];
  const raw = source.raw;
  if (raw?.store.driver === 'sqlite') {
    const db =
      source.resolved?.store.driver === 'sqlite'
        ? source.resolved.store.path
        : resolveConfigPath(raw.store.path, source.configDir);
    checks.push(stateDir(db));
  }
  checks.push(
    codeDir(
      'transforms dir',
      source.resolved?.hooks.transformsRoot ?? join(source.configDir, 'hooks', 'transforms'),
    ),
  );
  if (raw?.hooks.gmail) {
    checks.push(
      secretFile('gmail credentials', resolveConfigPath(raw.hooks.gmail.credentialsFile, source.configDir)),
    );
  }
  for (const { keyPath, file } of source.secretFiles) checks.push(referencedFile(keyPath, file));
  return checks.filter((check): check is CheckResult => check !== undefined);
}

function modeOf(path: string): number | undefined {
  return existsSync(path) ? statSync(path).mode & 0o777 : undefined;
}

const octal = (mode: number) => mode.toString(8).padStart(4, '0');
const writers = (mode: number) => (mode & 0o002 ? 'everyone' : 'the group');

function secretFile(label: string, path: string): CheckResult | undefined {
  const mode = modeOf(path);
  if (mode === undefined) return undefined;
  const name = `mode ${label}`;
  const fix = `chmod 600 ${path}`;
  if (mode & 0o022) return fail(name, `${path} is ${octal(mode)}: writable by ${writers(mode)}; ${fix}`);
  if (mode & 0o004) return fail(name, `${path} is ${octal(mode)}: readable by every local user; ${fix}`);
  if (mode & 0o040) return warn(name, `${path} is ${octal(mode)}: readable by the group; ${fix}`);
  return ok(name, `${path} is ${octal(mode)}`);
}

/** A file that holds the value of `keyPath`: it should be the gateway user's alone. */
function referencedFile(keyPath: string, path: string): CheckResult | undefined {
  const mode = modeOf(path);
  if (mode === undefined) return undefined; // the config check names a missing file
  const name = `mode ${keyPath}`;
  if (mode & 0o077) {
    return warn(name, `${path}, read for ${keyPath}, is ${octal(mode)}: ${openTo(mode)}; chmod 600 ${path}`);
  }
  return ok(name, `${path} is ${octal(mode)}`);
}

/** Who besides the owner may do what: "readable by every local user, writable by the group". */
function openTo(mode: number): string {
  const said: string[] = [];
  if (mode & 0o004) said.push('readable by every local user');
  else if (mode & 0o040) said.push('readable by the group');
  if (mode & 0o002) said.push('writable by every local user');
  else if (mode & 0o020) said.push('writable by the group');
  return said.length > 0 ? said.join(', ') : 'open to the group or others';
}

function stateDir(dbPath: string): CheckResult | undefined {
  const dir = dirname(dbPath);
  const mode = modeOf(dir);
  if (mode === undefined) return undefined; // created (0700) by the first `agentgate run`
  const name = 'mode state dir';
  const fix = `chmod 700 ${dir}`;
  if (mode & 0o022) return fail(name, `${dir} is ${octal(mode)}: writable by ${writers(mode)}; ${fix}`);
  const dbMode = modeOf(dbPath);
  if (mode & 0o001 && dbMode !== undefined && dbMode & 0o004) {
    return fail(
      name,
      `${dbPath} is readable by every local user (directory ${octal(mode)}, file ${octal(dbMode)}); ${fix}`,
    );
  }
  if (mode & 0o077)
    return warn(
      name,
      `${dir} is ${octal(mode)}: open to ${mode & 0o007 ? 'other users' : 'the group'}; ${fix}`,
    );
  return ok(name, `${dir} is ${octal(mode)}`);
}

function codeDir(label: string, path: string): CheckResult | undefined {
  const mode = modeOf(path);
  if (mode === undefined) return undefined;
  const name = `mode ${label}`;
  if (mode & 0o022) {
    return fail(
      name,
      `${path} is ${octal(mode)}: writable by ${writers(mode)}, who could make the gateway run their code; chmod go-w ${path}`,
    );
  }
  return ok(name, `${path} is ${octal(mode)}`);
}
