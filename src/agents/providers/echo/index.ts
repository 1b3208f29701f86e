/** `api: "echo"`, whole: its entry's schema, its client (client.ts) and doctor's check (nothing to prove). */
import { ok } from '../../../http/probe.js';
import { defineProvider } from '../kit/descriptor.js';
import { createEchoProvider } from './client.js';
import { echoConfig } from './config.js';

export const echo = defineProvider({
  api: 'echo',
  config: echoConfig,
  create: (name) => createEchoProvider(name),
  probe: (_config, { name }) => ok(name, 'echo: the offline demo provider (nothing to check)'),
});
