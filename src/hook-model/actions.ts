/**
 * Turns validated wake/agent requests into store actions, and store commits
 * into their HTTP answers (docs/endpoints.md).
 */

import type { Action, Committed, NewRun, StoredAnswer } from '../store/types.js';
import { uuidv7 } from '../util/ids.js';
import { checkAttachmentBytes, DEFAULT_ATTACHMENT_MAX_BYTES, decodeAttachments } from './attachments.js';
import type { AgentRequest, WakeRequest } from './payload.js';
import type { HookPolicy } from './policy.js';

export interface ActionContext {
  policy: HookPolicy;
  defaultTimeoutSeconds: number;
  now: number;
  /** e.g. "hook:wake", "hook:agent", "hook:github" */
  source: string;
  /** The id of the hook token that opened the request (docs/senders.md); absent when none did. */
  tokenId?: string;
  /** The hook the request came to (its target's name: `agent`, a mapping's id): a budget's scope. */
  hookId?: string;
  /** `hooks.attachments.maxBytes`: the files of one run together, decoded (docs/attachments.md). */
  attachmentMaxBytes?: number;
}

export function wakeAction(request: WakeRequest, ctx: ActionContext): Action {
  return {
    kind: 'wake',
    event: {
      id: `evt_${uuidv7(ctx.now)}`,
      sessionKey: ctx.policy.defaultAgentOf.mainSessionKey,
      text: request.text,
      source: ctx.source,
      wakeMode: request.mode ?? 'now',
      ts: ctx.now,
      tokenId: ctx.tokenId ?? null,
    },
  };
}

export interface AgentDefaults {
  /** Session key a mapping supplies when the request gives none. */
  sessionKey?: string;
  allowUnsafeExternalContent?: boolean;
  /** The mapping's completion callback: the operator's, not checked against the allowed origins. */
  callbackUrl?: string;
}

export function agentAction(request: AgentRequest, ctx: ActionContext, defaults: AgentDefaults = {}): Action {
  const { policy } = ctx;
  const deliver = request.deliver ?? true;
  const channel = request.channel ?? 'last';
  // Too many bytes is a 413, found from the base64 lengths before any policy check or decoding.
  checkAttachmentBytes(request.attachments, ctx.attachmentMaxBytes ?? DEFAULT_ATTACHMENT_MAX_BYTES);
  // A malformed recipient is an invalid payload, checked before any policy.
  policy.checkRecipient(channel, deliver, request.to);
  // Policy checks in the order of docs/errors.md:
  // session key, agent, model, channel.
  const sessionKey = policy.resolveSessionKey(request.sessionKey, defaults.sessionKey);
  const agent = policy.resolveAgent(request.agentId);
  const model = policy.resolveModel(request.model, agent);
  policy.checkChannel(channel, deliver);
  if (request.callbackUrl !== undefined) policy.checkCallbackOrigin(request.callbackUrl);
  const run: NewRun = {
    id: `run_${uuidv7(ctx.now)}`,
    agentId: agent.id,
    sessionKey,
    mainSessionKey: agent.mainSessionKey,
    name: request.name ?? null,
    message: request.message,
    model,
    thinking: request.thinking ?? null,
    timeoutSeconds: request.timeoutSeconds ?? ctx.defaultTimeoutSeconds,
    wakeMode: request.wakeMode ?? 'now',
    deliver,
    channel,
    to: request.to ?? null,
    allowUnsafeExternalContent: defaults.allowUnsafeExternalContent ?? false,
    source: ctx.source,
    createdAt: ctx.now,
    callbackUrl: request.callbackUrl ?? defaults.callbackUrl ?? null,
    tokenId: ctx.tokenId ?? null,
    ...(ctx.hookId ? { hookId: ctx.hookId } : {}),
    attachments: decodeAttachments(request.attachments),
  };
  return request.waitForCompletion ? { kind: 'agent', run, waitForCompletion: true } : { kind: 'agent', run };
}

/**
 * The success answer for what was committed (docs/endpoints.md); `committed[i]`
 * belongs to `actions[i]`. Ids and modes are plain ASCII from a fixed alphabet,
 * so the common single-action answers are written without JSON.stringify.
 */
export function renderAnswer(actions: readonly Action[], committed: readonly Committed[]): StoredAnswer {
  const [first] = committed;
  const [action] = actions;
  if (committed.length === 1 && first?.kind === 'wake' && action?.kind === 'wake') {
    return {
      status: 200,
      body: `{"ok":true,"mode":"${action.event.wakeMode}","eventId":"${first.eventId}","eventOutcome":"${first.outcome}"}`,
    };
  }
  if (committed.length === 1 && first?.kind === 'agent') {
    return { status: 202, body: `{"ok":true,"runId":"${first.runId}"}` };
  }
  const runIds = committed.flatMap((c) => (c.kind === 'agent' ? [c.runId] : []));
  const eventIds = committed.flatMap((c) => (c.kind === 'wake' ? [c.eventId] : []));
  return { status: runIds.length > 0 ? 202 : 200, body: JSON.stringify({ ok: true, runIds, eventIds }) };
}
