/** A `models.providers` entry with `api: "echo"` (docs/agent-runs.md, "Providers"): only the limits. */
import { z } from 'zod';
import { maxConcurrentField } from '../kit/limits.js';

export const echoConfig = z.strictObject({
  api: z.literal('echo'),
  /** Model calls in flight to this provider, at most, in one gateway process (docs/agent-runs.md, "Provider limits"). */
  maxConcurrent: maxConcurrentField,
});
export type EchoConfig = z.output<typeof echoConfig>;
