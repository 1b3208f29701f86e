/**
 * What a hook name resolves to: the built-in `wake` and `agent` endpoints
 * (and, later, mappings). A target validates a parsed body and produces the
 * actions to commit.
 */
import type { ResolvedConfig } from '../config/resolved.js';
import type { Action } from '../store/types.js';
import { type ActionContext, agentAction, wakeAction } from './actions.js';
import { agentRequestSchema, validatePayload, wakeRequestSchema } from './payload.js';

export interface HookTarget {
  /** The hook name after `hooks.path`, e.g. "wake". */
  name: string;
  /** Recorded on what it produces, e.g. "hook:wake". */
  source: string;
  maxBodyBytes: number;
  build(payload: Record<string, unknown>, ctx: ActionContext): Action[];
}

export function builtInTargets(config: ResolvedConfig): Map<string, HookTarget> {
  const maxBodyBytes = config.hooks.maxBodyBytes;
  const wake: HookTarget = {
    name: 'wake',
    source: 'hook:wake',
    maxBodyBytes,
    build: (payload, ctx) => [wakeAction(validatePayload(wakeRequestSchema, payload), ctx)],
  };
  const agent: HookTarget = {
    name: 'agent',
    source: 'hook:agent',
    maxBodyBytes,
    build: (payload, ctx) => [agentAction(validatePayload(agentRequestSchema, payload), ctx)],
  };
  return new Map([
    [wake.name, wake],
    [agent.name, agent],
  ]);
}
