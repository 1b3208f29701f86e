/** A `models.providers` entry with `api: "echo"` (docs/agent-runs.md, "Providers"): nothing to set. */
import { z } from 'zod';

export const echoConfig = z.strictObject({ api: z.literal('echo') });
export type EchoConfig = z.output<typeof echoConfig>;
