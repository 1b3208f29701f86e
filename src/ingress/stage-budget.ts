/**
 * The budget stage (docs/budgets.md): once the actions are built, before anything is stored, a
 * request in a scope whose budget is spent for its window is refused — 429 `budget_exceeded`,
 * `Retry-After` the seconds to that window's end. Its scopes: `all`, its hook (the target's
 * name), its hook token, the agent of each action, and `hook:wake` for a wake (the heartbeat it
 * asks for counts there). In memory (the budget book): no store read, and nothing at all to do
 * while no budget is exceeded.
 */
import { ALL_SCOPE, agentScope, hookScope, tokenScope } from '../budgets/scopes.js';
import { HttpError } from '../http/errors.js';
import type { Action } from '../store/types.js';
import type { BuiltHook, HookDoor } from './hook-request.js';

export function refuseOverBudget(door: HookDoor, state: BuiltHook, now: number): void {
  const refusing = door.budgets?.refusal(() => requestScopes(state), now);
  if (!refusing) return;
  const seconds = Math.max(1, Math.ceil((refusing.resetsAt - now) / 1000));
  throw new HttpError(
    'budget_exceeded',
    `budget "${refusing.id}" is spent for this ${refusing.window}; it resets at ${new Date(refusing.resetsAt).toISOString()}`,
    { 'retry-after': String(seconds) },
  );
}

function requestScopes(state: BuiltHook): string[] {
  const scopes = [ALL_SCOPE, hookScope(state.target.name), tokenScope(state.token.id)];
  for (const action of state.actions) scopes.push(...actionScopes(action));
  return scopes;
}

function actionScopes(action: Action): string[] {
  if (action.kind === 'agent') return [agentScope(action.run.agentId)];
  // A wake's event goes to an agent's main session (`agent:<id>:main`); its heartbeat counts
  // toward that agent and toward the `wake` hook.
  const agentId = /^agent:(.+):main$/.exec(action.event.sessionKey)?.[1];
  return agentId === undefined ? [hookScope('wake')] : [hookScope('wake'), agentScope(agentId)];
}
