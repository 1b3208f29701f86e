import type { ResolvedStore } from '../store/drivers/registry.js';
import type {
  AgentConfig,
  AlertsConfig,
  ChannelsConfig,
  HooksConfig,
  ProviderConfig,
  RawConfig,
} from './schema.js';

export type { ResolvedStore };

export interface ResolvedAgent extends Omit<AgentConfig, 'workspace'> {
  workspace: string;
  mainSessionKey: string;
}

export interface ModelPolicy {
  /** Allowed model references, when `agents.defaults.models` enforces a list. */
  allowed: ReadonlySet<string> | undefined;
  /** alias → `<provider>/<model>` */
  aliases: ReadonlyMap<string, string>;
  providers: ReadonlyMap<string, ProviderConfig>;
}

/** A hook token as the ingress matches it (docs/senders.md); `hooks.token` is the one with id `default`. */
export interface ResolvedHookToken {
  id: string;
  token: string;
  /** The hook names it opens; undefined for every hook. */
  hooks?: readonly string[];
  /** Epoch ms from which it is unknown; undefined for never. */
  notAfter?: number;
  /** CIDRs it may be used from; undefined for anywhere. */
  allowedSources?: readonly string[];
}

export interface ResolvedHooks extends Omit<HooksConfig, 'transformsDir' | 'tokens'> {
  /** Every hook token, `hooks.token` first (id `default`) when set, then `hooks.tokens` in order. */
  tokens: ResolvedHookToken[];
  /** Normalised: starts with "/", no trailing "/". */
  path: string;
  transformsRoot: string;
  transformsDir: string;
}

/** The configuration after defaults, `${ENV}` substitution, path resolution and cross-field checks. */
export interface ResolvedConfig {
  configPath: string;
  configDir: string;
  gateway: RawConfig['gateway'];
  store: ResolvedStore;
  hooks: ResolvedHooks;
  models: RawConfig['models'];
  agents: {
    defaults: RawConfig['agents']['defaults'];
    list: ResolvedAgent[];
    defaultAgentId: string;
  };
  modelPolicy: ModelPolicy;
  channels: ChannelsConfig;
  /** Alerts (docs/alerts.md); undefined when off. */
  alerts?: AlertsConfig;
  /** MCP servers and approval (docs/tools.md). */
  tools: RawConfig['tools'];
  /** Spend caps (docs/budgets.md); empty for none. */
  budgets: RawConfig['budgets'];
}

export function mainSessionKeyOf(agentId: string): string {
  return `agent:${agentId}:main`;
}
