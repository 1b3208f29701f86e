/**
 * What a budget limits and what counts toward it (docs/budgets.md). A scope is a string: `all`,
 * `hook:<id>` (a mapping's id, `agent` or `wake`), `token:<id>` or `agent:<id>`. A run counts
 * toward `all`, its hook, its hook token and its agent; a heartbeat toward `all`, its agent and
 * `hook:wake` (the wakes are what ask for heartbeats). The counters a spend is added to are the
 * configured budgets' only: with no budget, none.
 */
import type { BudgetConfig } from '../config/budget-rules.js';
import { windowEnd, windowStart } from '../store/rules/budgets.js';
import type { BudgetWindow, SpendAmount, SpendCounter } from '../store/types.js';

/** A configured budget, as the book checks it. */
export interface Budget {
  id: string;
  scope: string;
  window: BudgetWindow;
  limit: { usd?: number; tokens?: number };
}

export const ALL_SCOPE = 'all';
export const hookScope = (hookId: string) => `hook:${hookId}`;
export const tokenScope = (tokenId: string) => `token:${tokenId}`;
export const agentScope = (agentId: string) => `agent:${agentId}`;

/** The `budgets` section as the book checks it. */
export function budgetsOf(config: readonly BudgetConfig[]): Budget[] {
  return config.map((entry) => {
    const scope =
      entry.hook !== undefined
        ? hookScope(entry.hook)
        : entry.tokenId !== undefined
          ? tokenScope(entry.tokenId)
          : entry.agent !== undefined
            ? agentScope(entry.agent)
            : ALL_SCOPE;
    const window: BudgetWindow = entry.perHour ? 'hour' : 'day';
    const limit = (entry.perHour ?? entry.perDay) as Budget['limit'];
    return { id: entry.id, scope, window, limit: { ...limit } };
  });
}

/** The scopes a run counts toward. */
export function runScopes(run: {
  agentId: string;
  hookId?: string | null;
  tokenId?: string | null;
}): string[] {
  const scopes = [ALL_SCOPE, agentScope(run.agentId)];
  if (run.hookId) scopes.push(hookScope(run.hookId));
  if (run.tokenId) scopes.push(tokenScope(run.tokenId));
  return scopes;
}

/** The scopes a heartbeat of this agent counts toward. */
export const heartbeatScopes = (agentId: string): string[] => [
  ALL_SCOPE,
  agentScope(agentId),
  hookScope('wake'),
];

/** Whether a spend has reached a limit: either of its amounts, when given. */
export function reached(limit: Budget['limit'], spent: SpendAmount): boolean {
  return (
    (limit.usd !== undefined && spent.usd >= limit.usd) ||
    (limit.tokens !== undefined && spent.tokens >= limit.tokens)
  );
}

/** Each budget's counter at `at`: its scope in the window `at` falls in. */
export const counterOf = (budget: Budget, at: number): SpendCounter => ({
  scope: budget.scope,
  window: budget.window,
  start: windowStart(budget.window, at),
});

/** When the window a counter names ends. */
export const endOf = (counter: SpendCounter): number => windowEnd(counter.window, counter.start);

/**
 * The counters a spend at `at` in these scopes is added to: one per scope and window that some
 * budget limits (two budgets of one scope and window share it); empty when none does.
 */
export function countersFor(
  budgets: readonly Budget[],
  scopes: readonly string[],
  at: number,
): SpendCounter[] {
  const counters = new Map<string, SpendCounter>();
  for (const budget of budgets) {
    if (!scopes.includes(budget.scope)) continue;
    const key = `${budget.scope}\u0000${budget.window}`;
    if (!counters.has(key)) counters.set(key, counterOf(budget, at));
  }
  return [...counters.values()];
}
