/** Doctor's check of a `command` provider: its program exists and is executable (looked up on PATH). */
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { type CheckResult, fail, ok } from '../../../http/probe.js';
import type { ProviderProbeContext } from '../kit/descriptor.js';
import type { CommandConfig } from './config.js';

export function commandProbe(config: CommandConfig, { name, env }: ProviderProbeContext): CheckResult {
  const program = config.command[0] as string;
  const path = config.env?.PATH ?? env.PATH ?? '';
  const candidates = program.includes('/')
    ? [isAbsolute(program) ? program : resolve(config.cwd ?? '.', program)]
    : path
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, program));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return ok(name, `command: ${candidate} is executable`);
    } catch {
      // try the next PATH entry
    }
  }
  return fail(
    name,
    `command: "${program}" is not an executable file${program.includes('/') ? '' : ' on PATH'}`,
  );
}
