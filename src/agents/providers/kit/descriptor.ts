/**
 * A provider API, whole (docs/agent-runs.md, "Providers"): its `models.providers` entry's
 * schema, the client it builds, and doctor's check of it — written in its own folder and
 * listed once in the registry (../index.ts). What every provider learns next (tool
 * calling, token usage) is declared here.
 */
import type { z } from 'zod';
import type { CheckResult, ProbeCall } from '../../../http/probe.js';
import type { ModelProvider } from './types.js';

/** What doctor knows when it checks a provider. */
export interface ProviderProbeContext {
  /** Heads the result: `provider <name>`. */
  name: string;
  /** The models the config names for this provider, without the `<provider>/` prefix. */
  wanted: string[];
  /** Doctor's environment (a `command` provider's program is looked up on its PATH). */
  env: NodeJS.ProcessEnv;
}

export interface ProviderDescriptor<Api extends string, Schema extends z.ZodType> {
  /** The entry's `api`, the discriminator of `models.providers` entries. */
  readonly api: Api;
  /** The entry's schema, strict, with `api: z.literal(api)` and its defaults. */
  readonly config: Schema;
  /** The client for an entry named `name`. */
  create(name: string, config: z.output<Schema>): ModelProvider;
  /** Doctor's check: a call to make (read-only, proving the key) or a verdict reached locally. */
  probe(config: z.output<Schema>, context: ProviderProbeContext): ProbeCall | CheckResult;
}

/** A descriptor, its types inferred (the config schema's exact type reaches config/schema.ts). */
export function defineProvider<Api extends string, Schema extends z.ZodType>(
  descriptor: ProviderDescriptor<Api, Schema>,
): ProviderDescriptor<Api, Schema> {
  return descriptor;
}
