/**
 * `budgets` (docs/budgets.md): each entry caps the spend of one scope — a hook, a hook token, an
 * agent, or everything — per UTC hour or day, in USD and/or tokens (input + output). The schema
 * checks each entry's shape (at most one scope, exactly one window, at least one limit, ids
 * unique); `budgetConfigProblems` checks what each scope names exists in the config.
 */
import { z } from 'zod';

const BUDGET_ID = /^[A-Za-z0-9_.:-]{1,64}$/;
const HOOK_SCOPES_BUILT_IN = ['agent', 'wake'];

const limitSchema = z.strictObject({
  usd: z
    .number({ error: 'must be a number of US dollars' })
    .positive('must be more than 0 (remove the budget for no limit)')
    .optional(),
  tokens: z
    .number({ error: 'must be a whole number of tokens' })
    .int('must be a whole number of tokens')
    .positive('must be more than 0 (remove the budget for no limit)')
    .optional(),
});

const budgetSchema = z
  .strictObject({
    id: z.string().regex(BUDGET_ID, 'must be 1-64 letters, digits, "-", "_", "." or ":"'),
    /** A hook: a mapping's id, `agent` (POST /hooks/agent) or `wake` (POST /hooks/wake and heartbeats). */
    hook: z.string().min(1, 'must not be empty').optional(),
    /** A hook token's id (`default` for hooks.token). */
    tokenId: z.string().min(1, 'must not be empty').optional(),
    /** An agent's id. */
    agent: z.string().min(1, 'must not be empty').optional(),
    perHour: limitSchema.optional(),
    perDay: limitSchema.optional(),
  })
  .superRefine((budget, ctx) => {
    const scopes = (['hook', 'tokenId', 'agent'] as const).filter((key) => budget[key] !== undefined);
    if (scopes.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: [scopes[1] as string],
        message: `a budget names at most one scope (hook, tokenId or agent), and this one already has ${scopes[0]}: make one budget per scope`,
      });
    }
    const windows = (['perHour', 'perDay'] as const).filter((key) => budget[key] !== undefined);
    if (windows.length === 0) {
      ctx.addIssue({ code: 'custom', path: [], message: 'needs a window: perHour or perDay' });
    } else if (windows.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['perDay'],
        message: 'a budget has one window, and this one already has perHour: make two budgets',
      });
    }
    for (const window of windows) {
      const limit = budget[window];
      if (limit && limit.usd === undefined && limit.tokens === undefined) {
        ctx.addIssue({ code: 'custom', path: [window], message: 'needs a limit: usd, tokens or both' });
      }
    }
  });

export const budgetsSchema = z.array(budgetSchema).superRefine((budgets, ctx) => {
  const seen = new Map<string, number>();
  budgets.forEach((budget, index) => {
    const first = seen.get(budget.id);
    if (first !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [index, 'id'],
        message: `"${budget.id}" is already the id of budgets[${first}]`,
      });
    } else seen.set(budget.id, index);
  });
});

export type BudgetConfig = z.infer<typeof budgetSchema>;

/** What the config around the budgets must hold: the hooks, tokens and agents they name. */
export interface BudgetReferences {
  mappingIds: readonly string[];
  presets: readonly string[];
  tokenIds: readonly string[];
  agentIds: readonly string[];
}

export function budgetConfigProblems(budgets: readonly BudgetConfig[], refs: BudgetReferences): string[] {
  const problems: string[] = [];
  const hooks = new Set([...HOOK_SCOPES_BUILT_IN, ...refs.mappingIds, ...refs.presets]);
  budgets.forEach((budget, index) => {
    const at = `budgets[${index}]`;
    if (budget.hook !== undefined && !hooks.has(budget.hook)) {
      problems.push(
        `${at}.hook: no hook "${budget.hook}": name a mapping's id (hooks.mappings[].id), "agent" or "wake"`,
      );
    }
    if (budget.tokenId !== undefined && !refs.tokenIds.includes(budget.tokenId)) {
      problems.push(
        `${at}.tokenId: no hook token "${budget.tokenId}" (hooks.tokens[].id, or "default" for hooks.token)`,
      );
    }
    if (budget.agent !== undefined && !refs.agentIds.includes(budget.agent)) {
      problems.push(`${at}.agent: no agent "${budget.agent}" in agents.list`);
    }
  });
  return problems;
}
