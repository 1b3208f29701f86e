import type { ResolvedStore } from '../store/engines/registry.js';
import type { AgentConfig, ChannelsConfig, HooksConfig, ProviderConfig, RawConfig } from './schema.js';

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

export interface ResolvedHooks extends Omit<HooksConfig, 'transformsDir'> {
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
}

export function mainSessionKeyOf(agentId: string): string {
  return `agent:${agentId}:main`;
}
