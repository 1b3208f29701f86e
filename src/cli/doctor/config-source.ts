/**
 * The config as doctor sees it, at three depths, so one broken rule does not
 * hide every other finding: the substituted tree (any JSON5 object: enough for
 * the token and bind checks), the schema-valid config (enough for the store,
 * provider and channel probes) and the fully validated one (what `run` needs).
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import JSON5 from 'json5';
import { type SecretFileRef, substituteReferences } from '../../config/env.js';
import { loadConfigFile } from '../../config/load.js';
import type { ResolvedConfig } from '../../config/resolved.js';
import { configSchema, type RawConfig } from '../../config/schema.js';

export interface ConfigSource {
  path: string;
  configDir: string;
  /** False when there is no file at `path`. */
  exists: boolean;
  /** The parsed tree after `${ENV}` and `${file:}` substitution, whatever the schema says of it. */
  tree?: Record<string, unknown>;
  /** The keys whose values come from `${file:}` references, and those files. */
  secretFiles: SecretFileRef[];
  /** The config with defaults, when the schema accepts it. */
  raw?: RawConfig;
  /** The config `run` would start with, when it is valid. */
  resolved?: ResolvedConfig;
  problems: string[];
  warnings: string[];
}

export function readConfigSource(path: string, env: NodeJS.ProcessEnv): ConfigSource {
  const source: ConfigSource = {
    path,
    configDir: dirname(path),
    exists: true,
    secretFiles: [],
    problems: [],
    warnings: [],
  };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ...source, exists: false };
    source.problems.push(`cannot read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    return source;
  }
  try {
    const parsed: unknown = JSON5.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const substituted = substituteReferences(parsed, env);
      source.tree = substituted.value as Record<string, unknown>;
      source.secretFiles = substituted.files;
      const validated = configSchema.safeParse(source.tree);
      if (validated.success) source.raw = validated.data;
    }
  } catch {
    // Reported below by the loader, with its own wording.
  }
  const loaded = loadConfigFile(path, env);
  if (loaded.ok) {
    source.resolved = loaded.config;
    source.warnings = loaded.warnings;
  } else {
    source.problems = loaded.problems;
  }
  return source;
}

/** A string at a dotted path of the tree, when there is one. */
export function stringAt(tree: Record<string, unknown> | undefined, path: string): string | undefined {
  let value: unknown = tree;
  for (const key of path.split('.')) {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return typeof value === 'string' ? value : undefined;
}

/** Any value at a dotted path of the tree. */
export function valueAt(tree: Record<string, unknown> | undefined, path: string): unknown {
  let value: unknown = tree;
  for (const key of path.split('.')) {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
