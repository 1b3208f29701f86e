/**
 * Builds the provider a `models.providers` entry describes, and splits the
 * `"<provider>/<model>"` references agents and mappings use.
 */
import type { ProviderConfig } from '../../config/schema.js';
import { createAnthropicMessagesProvider } from './anthropic-messages.js';
import { createCommandProvider } from './command.js';
import { createEchoProvider } from './echo.js';
import { createOpenAiChatProvider } from './openai-chat.js';
import type { ModelProvider } from './types.js';

export * from './types.js';

export function createProvider(name: string, config: ProviderConfig): ModelProvider {
  switch (config.api) {
    case 'openai-chat':
      return createOpenAiChatProvider(name, config);
    case 'anthropic-messages':
      return createAnthropicMessagesProvider(name, config);
    case 'command':
      return createCommandProvider(name, config);
    case 'echo':
      return createEchoProvider(name);
  }
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
