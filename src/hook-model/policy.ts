/**
 * The routing and security policies applied to a validated hook action:
 * agent ids, session keys, models and delivery channels (docs/endpoints.md and docs/design-decisions.md).
 */
import { randomUUID } from 'node:crypto';
import { recipientProblem } from '../channels/recipients.js';
import { primaryOf } from '../config/model-chain.js';
import type { ResolvedAgent, ResolvedConfig } from '../config/resolved.js';
import type { ChannelId } from '../config/schema.js';
import { normalisedOrigin, originSet } from '../http/callback-url.js';
import { HttpError } from '../http/errors.js';

/** Session keys of this form belong to agents' main sessions, never to hook runs. */
const MAIN_SESSION_PREFIX = 'agent:';

export class HookPolicy {
  private readonly agentsById: Map<string, ResolvedAgent>;
  private readonly defaultAgent: ResolvedAgent;
  private readonly allowAnyAgent: boolean;
  private readonly allowedAgentIds: ReadonlySet<string>;
  private readonly callbackOrigins: ReadonlySet<string>;

  constructor(private readonly config: ResolvedConfig) {
    this.callbackOrigins = originSet(config.hooks.callbacks?.allowedOrigins ?? []);
    this.agentsById = new Map(config.agents.list.map((agent) => [agent.id, agent]));
    this.defaultAgent = this.agentsById.get(config.agents.defaultAgentId) as ResolvedAgent;
    const allowed = config.hooks.allowedAgentIds;
    this.allowAnyAgent = allowed === undefined || allowed.includes('*');
    this.allowedAgentIds = new Set(allowed ?? []);
  }

  get defaultAgentOf(): ResolvedAgent {
    return this.defaultAgent;
  }

  /** An explicit `agentId` must pass `hooks.allowedAgentIds`; an unknown one falls back to the default agent. */
  resolveAgent(requested: string | undefined): ResolvedAgent {
    if (requested === undefined) return this.defaultAgent;
    if (!this.allowAnyAgent && !this.allowedAgentIds.has(requested)) {
      throw new HttpError(
        'agent_not_allowed',
        `agentId: "${requested}" is not allowed by hooks.allowedAgentIds`,
      );
    }
    return this.agentsById.get(requested) ?? this.defaultAgent;
  }

  /**
   * Session key of an agent run: the request's (when policy allows), else the
   * mapping's, else `hooks.defaultSessionKey`, else a fresh `hook:<uuid>`.
   */
  resolveSessionKey(fromRequest: string | undefined, fromMapping?: string): string {
    const { hooks } = this.config;
    if (fromRequest !== undefined) {
      if (!hooks.allowRequestSessionKey) {
        throw new HttpError(
          'session_key_not_allowed',
          'sessionKey: not accepted from requests (hooks.allowRequestSessionKey is false)',
        );
      }
      this.checkPrefixes(fromRequest);
      return fromRequest;
    }
    if (fromMapping !== undefined) {
      this.checkPrefixes(fromMapping);
      return fromMapping;
    }
    return hooks.defaultSessionKey ?? `hook:${randomUUID()}`;
  }

  private checkPrefixes(key: string): void {
    const prefixes = this.config.hooks.allowedSessionKeyPrefixes;
    if (key.startsWith(MAIN_SESSION_PREFIX)) {
      throw new HttpError(
        'session_key_not_allowed',
        `sessionKey: keys starting with "${MAIN_SESSION_PREFIX}" are reserved for agents' main sessions`,
      );
    }
    if (prefixes !== undefined && !prefixes.some((prefix) => key.startsWith(prefix))) {
      throw new HttpError(
        'session_key_not_allowed',
        `sessionKey: must start with one of hooks.allowedSessionKeyPrefixes (${prefixes.join(', ') || 'none'})`,
      );
    }
  }

  /**
   * The model a run will use: the override (an alias or `<provider>/<model>`,
   * checked against the allowlist), else the agent's, else `agents.defaults.model` — the
   * primary of a chain, whose fallbacks the worker adds (docs/agent-runs.md, "Fallbacks").
   * Resolved at accept time so the run record shows it.
   */
  resolveModel(requested: string | undefined, agent: ResolvedAgent): string | null {
    const { allowed, aliases, providers } = this.config.modelPolicy;
    if (requested === undefined) {
      const setting = agent.model ?? this.config.agents.defaults.model;
      if (setting === undefined) return null;
      const primary = primaryOf(setting);
      return aliases.get(primary) ?? primary;
    }
    const model = aliases.get(requested) ?? requested;
    if (allowed !== undefined) {
      if (!allowed.has(model)) {
        throw new HttpError('model_not_allowed', `model: "${requested}" is not in agents.defaults.models`);
      }
      return model;
    }
    const slash = model.indexOf('/');
    if (slash <= 0 || slash === model.length - 1) {
      throw new HttpError('invalid_payload', 'model: must be "<provider>/<model>" or an alias', {}, 'model');
    }
    const provider = model.slice(0, slash);
    if (!providers.has(provider)) {
      throw new HttpError(
        'invalid_payload',
        `model: provider "${provider}" is not configured in models.providers`,
        {},
        'model',
      );
    }
    return model;
  }

  /** A `to` given with a named channel must have that platform's form (an `invalid_payload`). */
  checkRecipient(channel: 'last' | ChannelId, deliver: boolean, to: string | undefined): void {
    if (!deliver || channel === 'last' || to === undefined) return;
    const problem = recipientProblem(channel, to);
    if (problem) throw new HttpError('invalid_payload', `to: ${problem}`, {}, 'to');
  }

  /**
   * A request's own `callbackUrl` (already a valid http(s) URL) must have an origin
   * listed in `hooks.callbacks.allowedOrigins` (docs/callers.md, "Asking for one"): the
   * caller picks where the gateway will POST, so the operator picks which places may be
   * picked.
   */
  checkCallbackOrigin(callbackUrl: string): void {
    const origin = normalisedOrigin(new URL(callbackUrl));
    if (!this.callbackOrigins.has(origin)) {
      throw new HttpError(
        'callback_not_allowed',
        `callbackUrl: origin ${origin} is not listed in hooks.callbacks.allowedOrigins`,
      );
    }
  }

  /** With `deliver` true, a named channel must be configured; `last` is resolved at delivery time. */
  checkChannel(channel: 'last' | ChannelId, deliver: boolean): void {
    if (!deliver || channel === 'last') return;
    if (this.config.channels[channel] === undefined) {
      throw new HttpError(
        'channel_not_configured',
        `channel: "${channel}" is not configured (add it under channels.${channel})`,
      );
    }
  }
}
