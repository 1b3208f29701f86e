/**
 * What a hook name resolves to: the built-in `wake` and `agent` endpoints, or
 * mapped hooks (mappings and presets). A target turns a parsed request into
 * the actions to commit; it may decline a payload (`accepts`, for mappings
 * matched on the payload's `source`) and may produce no action at all (a
 * transform returning null: 204).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ResolvedConfig } from '../config/resolved.js';
import type { Action } from '../store/types.js';
import { type ActionContext, agentAction, wakeAction } from './actions.js';
import { agentRequestSchema, validatePayload, wakeRequestSchema } from './payload.js';

export interface HookRequest {
  payload: Record<string, unknown>;
  /** The raw body, as received (for signatures). */
  body: Buffer;
  headers: IncomingHttpHeaders;
  query: Record<string, unknown>;
  /** The hook name after `hooks.path`. */
  name: string;
  url: string;
}

/** What a target builds for a request its filter turns away (docs/mappings.md, "Filters"). */
export const FILTERED = 'filtered';
export type Built = Action[] | typeof FILTERED;

export interface HookTarget {
  /** What the target is called in logs and idempotency scopes, e.g. "wake" or "github". */
  name: string;
  /** Recorded on what it produces, e.g. "hook:wake". */
  source: string;
  maxBodyBytes: number;
  /**
   * The target also checks the sender's signature: authentication is only
   * complete (and the failure count reset) once that passed.
   */
  verifies?: boolean;
  /**
   * The sender's signature is the credential (`auth: "signature"`, docs/senders.md): no hook
   * token is asked for, and a bad signature is `invalid_signature`.
   */
  signatureIsCredential?: boolean;
  /**
   * The sender's id of this delivery (docs/senders.md, "Redeliveries"), read once the request
   * is built (its signature checked): a redelivery under it replays the first answer.
   */
  deliveryId?(request: HookRequest, now: number): string | undefined;
  /**
   * Requests per minute to this hook, all callers together (docs/callers.md,
   * "Per-hook limits"), and the bucket they are counted in when shared (/wake and
   * /agent share one); without `bucket`, each hook name has its own.
   */
  rateLimit?: { perMinute: number; bucket?: string };
  /** Most runs of this hook executing at once (docs/callers.md, "Per-hook limits"). */
  maxConcurrentRuns?: number;
  /** For targets chosen by payload (`match.source`); absent means any payload. */
  accepts?(payload: Record<string, unknown>): boolean;
  build(request: HookRequest, ctx: ActionContext): Built | Promise<Built>;
}

export function builtInTargets(config: ResolvedConfig): Map<string, HookTarget> {
  const maxBodyBytes = config.hooks.maxBodyBytes;
  const perMinute = config.hooks.rateLimit?.perMinute;
  // One bucket for /wake and /agent together (docs/callers.md, "Per-hook limits"); other
  // buckets are "hook:<name>".
  const rateLimit = perMinute === undefined ? undefined : { perMinute, bucket: 'wake+agent' };
  const wake: HookTarget = {
    name: 'wake',
    source: 'hook:wake',
    maxBodyBytes,
    rateLimit,
    build: (request, ctx) => [wakeAction(validatePayload(wakeRequestSchema, request.payload), ctx)],
  };
  const agent: HookTarget = {
    name: 'agent',
    source: 'hook:agent',
    maxBodyBytes,
    rateLimit,
    maxConcurrentRuns: config.hooks.maxConcurrentRuns,
    build: (request, ctx) => [agentAction(validatePayload(agentRequestSchema, request.payload), ctx)],
  };
  return new Map([
    [wake.name, wake],
    [agent.name, agent],
  ]);
}
