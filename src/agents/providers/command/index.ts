/** `api: "command"`, whole: its entry's schema, its client (client.ts) and doctor's probe. */
import { defineProvider } from '../kit/descriptor.js';
import { createCommandProvider } from './client.js';
import { commandConfig } from './config.js';
import { commandProbe } from './probe.js';

export const command = defineProvider({
  api: 'command',
  config: commandConfig,
  create: createCommandProvider,
  probe: commandProbe,
});
