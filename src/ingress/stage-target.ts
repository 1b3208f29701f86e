/**
 * The target stage: the body parsed as a JSON object (400 `invalid_json`), the candidate
 * that takes the payload chosen (404 when none does), that one in the token's scope too
 * (403), and the body within that target's own limit (413; docs/errors.md).
 */
import { refuseOutsideScope } from '../auth/sender-rules.js';
import { parseJsonObject } from '../hook-model/payload.js';
import type { HookTarget } from '../hook-model/targets.js';
import { echoed, HttpError } from '../http/errors.js';
import { payloadTooLarge } from './body.js';
import type { HookRequestState, TargetedHook } from './hook-request.js';

/** A request without a body: parsed, it is the "request body is empty" of docs/errors.md. */
const NO_BODY = Buffer.alloc(0);

export function takeTarget(
  state: HookRequestState,
  received: Buffer | undefined,
): asserts state is TargetedHook {
  const body = received ?? NO_BODY;
  const payload = parseJsonObject(body);
  const target = targetFor(state.candidates, payload);
  if (target === undefined) {
    throw new HttpError('not_found', `no mapping of "${echoed(state.name)}" matches this payload`);
  }
  state.body = body;
  state.payload = payload;
  state.target = target;
  // Mappings that share a path are told apart by the payload: the one it chose must be in scope too.
  if (state.token.hooks !== undefined) refuseOutsideScope(state.token, state.name, [target.name]);
  if (body.length > target.maxBodyBytes) throw payloadTooLarge(target.maxBodyBytes);
}

/** The first candidate that accepts the payload (one without `accepts` takes any). */
function targetFor(
  candidates: readonly HookTarget[],
  payload: Record<string, unknown>,
): HookTarget | undefined {
  for (const candidate of candidates) if (candidate.accepts?.(payload) ?? true) return candidate;
  return undefined;
}
