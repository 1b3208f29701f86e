/**
 * The token stage: once a hook token matched (auth/guards.ts checked the query token,
 * the method, the lockout and the token, in that order), before the body — what the
 * token may open and from where (docs/senders.md), the hook's name and candidates,
 * and the hook's rate (docs/callers.md, "Per-hook limits"). Creates the request's state.
 */
import type { HookToken } from '../auth/hook-tokens.js';
import { refuseOutsideScope, refuseOutsideSources } from '../auth/sender-rules.js';
import { SIGNATURE_TOKEN_ID } from '../config/schema.js';
import type { HookTarget } from '../hook-model/targets.js';
import { echoed, HttpError } from '../http/errors.js';
import { takeHookRate } from './hook-rate.js';
import type { DoorRequest, HookDoor, HookRequestState } from './hook-request.js';

/** What a hook its sender's signature opens accepts, in the token's place (docs/senders.md). */
export const SIGNED_SENDER: HookToken = Object.freeze({ id: SIGNATURE_TOKEN_ID });

/**
 * A hook name whose every mapping takes `auth: "signature"` needs no token: the identity its
 * requests go by until the signature is checked with the body (stage-actions.ts).
 */
export function signedSender(door: HookDoor, request: DoorRequest): HookToken | undefined {
  return door.ingress.state.router.opensWithSignature(request.params['*'] ?? '') ? SIGNED_SENDER : undefined;
}

export function openHookRequest(
  door: HookDoor,
  request: DoorRequest,
  address: string,
  token: HookToken,
): void {
  const hooks = door.ingress.state;
  const name = request.params['*'] ?? '';
  const candidates = hooks.router.candidates(name);
  // Set first, so that a refusal below is counted with its token (docs/operating.md, "Metrics").
  const state: HookRequestState = {
    hooks,
    token,
    name,
    candidates,
    body: null,
    payload: null,
    target: null,
    at: 0,
    actions: null,
    deliveryId: undefined,
    span: null,
    claim: undefined,
    streamed: undefined,
    subscription: undefined,
  };
  request.hookState = state;
  if (token.hooks !== undefined) refuseOutsideScope(token, name, candidates.map(targetName));
  refuseOutsideSources(token, hooks.fromAllowedSource, address);
  // With a signature still to check, authentication is not complete yet.
  if (!candidates.some(verifies)) door.limiter.succeed(address);
  if (candidates.length === 0) throw new HttpError('not_found', `no hook named "${echoed(name)}"`);
  // After the name, before the body (docs/callers.md, "Per-hook limits"): a refused request
  // stores nothing.
  takeHookRate(door.ingress.rates, name, candidates, door.now());
}

const targetName = (target: HookTarget): string => target.name;
const verifies = (target: HookTarget): boolean => target.verifies === true;
