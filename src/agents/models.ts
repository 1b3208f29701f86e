/**
 * Turns a model reference (`<provider>/<model>`, already alias-resolved) into
 * the provider instance and the provider's own model id. Providers are created
 * once, from `models.providers`.
 */
import type { ResolvedConfig } from '../config/resolved.js';
import type { ProviderConfig } from '../config/schema.js';
import { createProvider, splitModelRef } from './providers/index.js';
import type { ModelPrice } from './providers/kit/prices.js';
import type { ModelProvider } from './providers/types.js';

export interface ResolvedModel {
  provider: ModelProvider;
  model: string;
  ref: string;
  /** The provider's wire format (`models.providers.<name>.api`), for its model-call spans. */
  api: ProviderConfig['api'];
  /** The model's price (`models.providers.<name>.prices`; docs/usage.md); absent: not priced. */
  price?: ModelPrice;
}

export class ModelRouter {
  private readonly providers = new Map<
    string,
    { provider: ModelProvider; api: ProviderConfig['api']; prices: Record<string, ModelPrice> }
  >();

  constructor(private readonly config: ResolvedConfig) {
    for (const [name, providerConfig] of config.modelPolicy.providers) {
      const prices = ('prices' in providerConfig ? providerConfig.prices : undefined) ?? {};
      this.providers.set(name, {
        provider: createProvider(name, providerConfig),
        api: providerConfig.api,
        prices,
      });
    }
  }

  /** The model for an agent when a run or heartbeat names none. */
  defaultFor(agentId: string): string | null {
    const agent = this.config.agents.list.find((a) => a.id === agentId);
    const ref = agent?.model ?? this.config.agents.defaults.model;
    if (ref === undefined) return null;
    return this.config.modelPolicy.aliases.get(ref) ?? ref;
  }

  resolve(ref: string | null): ResolvedModel {
    if (ref === null) throw new Error('no model configured: set agents.defaults.model');
    const { provider: name, model } = splitModelRef(ref);
    const entry = this.providers.get(name);
    if (!entry) throw new Error(`model "${ref}": provider "${name}" is not configured`);
    const price = Object.hasOwn(entry.prices, model) ? entry.prices[model] : undefined;
    return { provider: entry.provider, model, ref, api: entry.api, ...(price ? { price } : {}) };
  }
}
