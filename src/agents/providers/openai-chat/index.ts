/** `api: "openai-chat"`, whole: its entry's schema, its client (client.ts) and doctor's probe. */
import { defineProvider } from '../kit/descriptor.js';
import { createOpenAiChatProvider } from './client.js';
import { openAiChatConfig } from './config.js';
import { openAiChatProbe } from './probe.js';

export const openAiChat = defineProvider({
  api: 'openai-chat',
  config: openAiChatConfig,
  create: createOpenAiChatProvider,
  probe: openAiChatProbe,
});
