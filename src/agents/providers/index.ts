/**
 * The registry of provider APIs, one folder each (docs/agent-runs.md, "Providers"): builds
 * the provider a `models.providers` entry describes, and splits the `"<provider>/<model>"`
 * references agents and mappings use. The order is that of the `api` values `config check`
 * names.
 */
import type { z } from 'zod';
import { anthropicMessages } from './anthropic-messages/index.js';
import { command } from './command/index.js';
import { echo } from './echo/index.js';
import type { ProviderDescriptor } from './kit/descriptor.js';
import type { ModelProvider } from './kit/types.js';
import { openAiChat } from './openai-chat/index.js';

export * from './kit/types.js';

export const PROVIDERS = [openAiChat, anthropicMessages, command, echo] as const;

/** Each API's entry schema, in the registry's order: the options of `models.providers` entries. */
export const PROVIDER_CONFIGS = PROVIDERS.map((provider) => provider.config) as unknown as ConfigsOf<
  typeof PROVIDERS
>;
type ConfigsOf<T extends readonly { config: z.ZodType }[]> = {
  readonly [K in keyof T]: T[K] extends { config: infer S } ? S : never;
};

export type AnyProvider = (typeof PROVIDERS)[number];
/** A `models.providers` entry, as parsed. */
export type ProviderConfig = z.output<AnyProvider['config']>;
export type ProviderApi = AnyProvider['api'];

/** The descriptor of an entry's `api`; the entry and its descriptor go together, which the union cannot spell out. */
export function providerFor(
  config: ProviderConfig,
): ProviderDescriptor<ProviderApi, z.ZodType<ProviderConfig>> {
  return PROVIDERS.find((provider) => provider.api === config.api) as unknown as ProviderDescriptor<
    ProviderApi,
    z.ZodType<ProviderConfig>
  >;
}

export function createProvider(name: string, config: ProviderConfig): ModelProvider {
  return providerFor(config).create(name, config);
}

/**
 * `"openai/gpt-4o-mini"` → `{provider: "openai", model: "gpt-4o-mini"}`. Splits at the
 * first "/" only: model ids themselves contain slashes (OpenRouter's `meta-llama/llama-3-8b`).
 */
export function splitModelRef(ref: string): { provider: string; model: string } {
  const slash = ref.indexOf('/');
  if (slash <= 0 || slash === ref.length - 1) {
    throw new Error(`model reference "${ref}" must be "<provider>/<model>"`);
  }
  return { provider: ref.slice(0, slash), model: ref.slice(slash + 1) };
}
