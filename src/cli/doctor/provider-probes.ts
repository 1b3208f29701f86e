/**
 * Doctor's provider checks: for each configured model provider, the probe its API's
 * folder describes (src/agents/providers/<api>/probe.ts) — an HTTP provider's models list,
 * asked with the configured key, lists the models the config names; a `command`
 * provider's program must exist and be executable; `echo` needs nothing.
 */
import { providerFor } from '../../agents/providers/index.js';
import { chainRefsOf } from '../../config/model-chain.js';
import type { RawConfig } from '../../config/schema.js';
import { httpProbe } from './http-probe.js';
import type { Probe } from './types.js';

/** `env`: doctor's environment, whose PATH a `command` provider's program is looked up on. */
export function providerProbes(raw: RawConfig, timeoutMs: number, env: NodeJS.ProcessEnv): Probe[] {
  return Object.entries(raw.models.providers).map(([id, provider]) => {
    const name = `provider ${id}`;
    const wanted = modelsNamed(raw, id);
    return {
      name,
      run: async (signal) => {
        const check = providerFor(provider).probe(provider, { name, wanted, env });
        return 'judge' in check ? httpProbe({ name, timeoutMs, signal, ...check }) : check;
      },
    };
  });
}

/** Models the config names for this provider (agent and default models with their fallbacks, the allowlist, aliases resolved). */
function modelsNamed(raw: RawConfig, providerId: string): string[] {
  const aliases = new Map<string, string>();
  const refs: string[] = [];
  for (const entry of raw.agents.defaults.models ?? []) {
    if (typeof entry === 'string') refs.push(entry);
    else {
      refs.push(entry.id);
      if (entry.alias) aliases.set(entry.alias, entry.id);
    }
  }
  for (const setting of [raw.agents.defaults.model, ...raw.agents.list.map((agent) => agent.model)]) {
    if (setting) refs.push(...chainRefsOf(setting, '').map((link) => link.ref));
  }
  const models = new Set<string>();
  for (const ref of refs.map((r) => aliases.get(r) ?? r)) {
    const slash = ref.indexOf('/');
    if (slash > 0 && ref.slice(0, slash) === providerId) models.add(ref.slice(slash + 1));
  }
  return [...models];
}
