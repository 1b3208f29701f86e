/** `api: "anthropic-messages"`, whole: its entry's schema, its client (client.ts) and doctor's probe. */
import { defineProvider } from '../kit/descriptor.js';
import { createAnthropicMessagesProvider } from './client.js';
import { anthropicMessagesConfig } from './config.js';
import { anthropicMessagesProbe } from './probe.js';

export const anthropicMessages = defineProvider({
  api: 'anthropic-messages',
  config: anthropicMessagesConfig,
  create: createAnthropicMessagesProvider,
  probe: anthropicMessagesProbe,
});
