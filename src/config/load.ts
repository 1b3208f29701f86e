/**
 * Reads, substitutes (`${ENV}`, `${file:}`), validates and resolves a config file. Every problem is
 * reported at once, each prefixed by its key path, so one run of
 * `agentgate config check` shows everything to fix.
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import JSON5 from 'json5';
import type { z } from 'zod';
import { type SecretFileRef, substituteReferences } from './env.js';
import { resolveConfigPath } from './paths.js';
import type { ResolvedConfig } from './resolved.js';
import { configSchema } from './schema.js';
import { checkConfig } from './semantics.js';

export type LoadResult =
  | {
      ok: true;
      config: ResolvedConfig;
      warnings: string[];
      /** The keys whose values came from `${file:}` references, for doctor's mode check. */
      secretFiles: SecretFileRef[];
    }
  | { ok: false; problems: string[] };

export class ConfigFileMissing extends Error {
  constructor(readonly path: string) {
    super(`config file not found: ${path}`);
  }
}

export function loadConfigFile(configPath: string, env: NodeJS.ProcessEnv = process.env): LoadResult {
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ConfigFileMissing(configPath);
    return { ok: false, problems: [`${configPath}: cannot read: ${(error as Error).message}`] };
  }
  return parseConfigText(text, configPath, env);
}

export function parseConfigText(text: string, configPath: string, env: NodeJS.ProcessEnv): LoadResult {
  let parsed: unknown;
  try {
    parsed = JSON5.parse(text);
  } catch (error) {
    return { ok: false, problems: [`${configPath}: not valid JSON5: ${(error as Error).message}`] };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { ok: false, problems: [`${configPath}: the top level must be an object`] };
  }

  const substituted = substituteReferences(parsed, env);
  const validated = configSchema.safeParse(substituted.value);
  const problems = substituted.problems.map((p) => `${p.path}: ${p.message}`);
  if (!validated.success) {
    // A reference that could not be substituted left an empty string: "must not be empty" at the
    // same key would only repeat the problem.
    const unsubstituted = new Set(substituted.problems.map((p) => p.path));
    const issues = validated.error.issues.filter((issue) => !unsubstituted.has(formatPath(issue.path)));
    problems.push(...formatIssues(issues));
  }
  if (problems.length > 0 || !validated.success) return { ok: false, problems: unique(problems) };

  const raw = validated.data;
  const configDir = dirname(configPath);
  const resolvePath = (value: string) => resolveConfigPath(value, configDir);
  const checked = checkConfig(raw, { configPath, configDir, resolvePath });
  if (checked.problems.length > 0) return { ok: false, problems: checked.problems };
  return { ok: true, config: checked.config, warnings: checked.warnings, secretFiles: substituted.files };
}

function formatIssues(issues: z.core.$ZodIssue[]): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    const at = formatPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) lines.push(`${at ? `${at}.` : ''}${key}: unknown key`);
    } else if (
      issue.code === 'invalid_union' &&
      'note' in issue &&
      issue.note === 'No matching discriminator'
    ) {
      lines.push(`${at}: ${issue.message}`);
    } else {
      lines.push(`${at || '(top level)'}: ${issue.message}`);
    }
  }
  return lines;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out;
}

function unique(lines: string[]): string[] {
  return [...new Set(lines)];
}
