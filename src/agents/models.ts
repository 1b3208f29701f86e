/**
 * Turns a model reference (`<provider>/<model>`, already alias-resolved) into
 * the provider instance and the provider's own model id. Providers are created
 * once, from `models.providers`. Also says which models a run calls, in order:
 * its agent's chain (docs/agent-runs.md, "Fallbacks") when it runs the chain's
 * primary, else only the model it asked for.
 */
import { type ModelSetting, primaryOf } from '../config/model-chain.js';
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

  /** The model for an agent when a run or heartbeat names none: its chain's primary. */
  defaultFor(agentId: string): string | null {
    const setting = this.settingOf(agentId);
    return setting === undefined ? null : this.unalias(primaryOf(setting));
  }

  /**
   * The references a turn calls, in order (alias-resolved): with no model named, or the agent's
   * primary named (a run's stored model is its primary when it asked for none), the agent's
   * chain; another model named — a request's or a mapping's override — only that one.
   */
  chainFor(agentId: string, ref: string | null): string[] {
    const setting = this.settingOf(agentId);
    const chain =
      setting === undefined
        ? []
        : typeof setting === 'string'
          ? [this.unalias(setting)]
          : [setting.primary, ...setting.fallbacks].map((link) => this.unalias(link));
    if (ref === null || ref === chain[0]) return chain;
    return [ref];
  }

  private settingOf(agentId: string): ModelSetting | undefined {
    const agent = this.config.agents.list.find((a) => a.id === agentId);
    return agent?.model ?? this.config.agents.defaults.model;
  }

  private unalias(ref: string): string {
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
