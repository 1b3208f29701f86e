/**
 * The actions stage: the chosen target builds what the request is to commit — the
 * payload's and the policy's checks (400s; docs/errors.md), a mapping's sender signature
 * (401, counted toward the lockout: docs/senders.md), its transform (500 `mapping_failed`).
 */

import type { FastifyReply } from 'fastify';
import { clientAddress, refuseAuthFailure } from '../auth/guards.js';
import type { Built, HookRequest } from '../hook-model/targets.js';
import type { SignatureRejected } from '../mappings/mapped-target.js';
import type { Action } from '../store/types.js';
import type { BuiltHook, DoorRequest, HookDoor, TargetedHook } from './hook-request.js';

/**
 * The target's actions, built at `at` (kept on the state for the idempotency record): an
 * array for a built-in hook, a promise for a mapping that awaits.
 */
export function buildActions(state: TargetedHook, request: DoorRequest, at: number): Built | Promise<Built> {
  state.at = at;
  const { hooks, target } = state;
  const hookRequest: HookRequest = {
    payload: state.payload,
    body: state.body,
    headers: request.headers,
    query: request.query,
    name: state.name,
    url: request.url,
  };
  const built = target.build(hookRequest, {
    policy: hooks.policy,
    defaultTimeoutSeconds: hooks.config.agents.defaults.timeoutSeconds,
    now: at,
    source: target.source,
    tokenId: state.token.id,
    hookId: target.name,
    attachmentMaxBytes: hooks.config.hooks.attachments?.maxBytes,
  });
  const { deliveryId } = target;
  if (deliveryId === undefined) return built;
  // Once built: the build checked the signature, so the id read is a signed one.
  return Promise.resolve(built).then((actions) => {
    state.deliveryId = deliveryId(hookRequest, at);
    return actions;
  });
}

/**
 * A request the mapping's filter turned away (docs/mappings.md, "Filters"): authenticated (a
 * signature that passed completes it), counted, answered 200, and nothing stored.
 */
export function answerFiltered(
  door: HookDoor,
  state: TargetedHook,
  request: DoorRequest,
  reply: FastifyReply,
) {
  if (state.target.verifies) door.limiter.succeed(clientAddress(request));
  door.metrics?.hookFiltered(state.target.name);
  return reply.code(200).send({ ok: true, filtered: true });
}

/** A rejected signature counts as a failed authentication: its 401, or the 429 once locked out. */
export function refuseSignature(
  door: HookDoor,
  request: DoorRequest,
  error: SignatureRejected,
): Promise<never> {
  return refuseAuthFailure(door.limiter, clientAddress(request), error, door.log);
}

/** The actions are the request's; a signature that passed completes its authentication. */
export function actionsBuilt(
  door: HookDoor,
  state: TargetedHook,
  request: DoorRequest,
  actions: Action[],
): asserts state is BuiltHook {
  state.actions = actions;
  if (state.target.verifies) door.limiter.succeed(clientAddress(request));
}
