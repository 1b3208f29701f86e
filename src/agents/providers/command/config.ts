/** A `models.providers` entry with `api: "command"` (docs/agent-runs.md, "Providers"). */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';
import { maxConcurrentField } from '../kit/limits.js';

export const commandConfig = z.strictObject({
  api: z.literal('command'),
  /** Model calls in flight to this provider, at most, in one gateway process (docs/agent-runs.md, "Provider limits"). */
  maxConcurrent: maxConcurrentField,
  /** argv of the local agent CLI; the prompt goes to its stdin, the reply comes from stdout. */
  command: z.array(nonEmpty).min(1, 'must name the program to run'),
  cwd: nonEmpty.optional(),
  env: z.record(z.string(), z.string()).optional(),
});
export type CommandConfig = z.output<typeof commandConfig>;
