/**
 * Which runs a claim leaves queued for the providers' sake (docs/agent-runs.md, "Provider
 * limits"), from the config in force: the runs whose model is on a provider at its
 * `maxConcurrent` here, or on one that answered 429 for longer than a run's retries wait —
 * unless, for the latter, an agent's chain that starts there falls back to a provider that is
 * free, so its runs still go through. The store filters by these lists (store/rules/claim-hold.ts).
 */
import type { ResolvedConfig } from '../config/resolved.js';
import type { ClaimHold } from '../store/types.js';
import type { ModelRouter } from './models.js';
import type { ProviderLimits } from './provider-limits.js';

/** The provider of a `<provider>/<model>` reference. */
export function providerOf(ref: string): string {
  return ref.slice(0, Math.max(0, ref.indexOf('/')));
}

/** The provider a run calls first: its model's (an alias resolved), else its agent's primary's. */
export function firstProviderOf(
  config: ResolvedConfig,
  models: ModelRouter,
  run: { agentId: string; model: string | null },
): string | undefined {
  const model = run.model === null ? null : (config.modelPolicy.aliases.get(run.model) ?? run.model);
  const first = models.chainFor(run.agentId, model)[0];
  return first === undefined ? undefined : providerOf(first);
}

/** The claim's hold, or undefined when no provider is held back now. */
export function providerHold(
  config: ResolvedConfig,
  models: ModelRouter,
  limits: ProviderLimits,
): ClaimHold | undefined {
  const providers = [...config.modelPolicy.providers.keys()];
  const capped = providers.filter((p) => limits.atCap(p));
  const limited = providers.filter((p) => limits.limitedUntil(p) !== undefined);
  if (capped.length === 0 && limited.length === 0) return undefined;
  const blocked = new Set([...capped, ...limited]);
  const chains = config.agents.list.map((agent) => ({ agent, chain: models.chainFor(agent.id, null) }));
  const escapes = (provider: string) =>
    chains.some(
      ({ chain }) =>
        chain[0] !== undefined &&
        providerOf(chain[0]) === provider &&
        chain.some((ref) => !blocked.has(providerOf(ref))),
    );
  const held = new Set([...capped, ...limited.filter((p) => !escapes(p))]);
  if (held.size === 0) return undefined;
  return {
    modelPrefixes: [...held].map((p) => `${p}/`),
    models: [...config.modelPolicy.aliases]
      .filter(([, target]) => held.has(providerOf(target)))
      .map(([alias]) => alias),
    agentIdsWithoutModel: chains
      .filter(({ chain }) => chain[0] !== undefined && held.has(providerOf(chain[0])))
      .map(({ agent }) => agent.id),
  };
}
