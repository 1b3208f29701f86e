/**
 * `GET /api/budgets` (docs/budgets.md): each budget's current window — its limit, its spend,
 * when it resets, whether it is exceeded — read from the store for the answer. Registered by
 * admin-routes.ts inside its authenticated scope, so it takes the admin token only.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BudgetBook, BudgetState } from '../budgets/book.js';
import { ADMIN_SECURITY, ErrorAnswer } from './admin-schemas.js';

const BudgetView = z.object({
  id: z.string().describe('The budget’s `id`.'),
  scope: z
    .string()
    .describe('What it limits: `all`, `hook:<mapping id | agent | wake>`, `token:<id>` or `agent:<id>`.'),
  window: z.enum(['hour', 'day']).describe('`perHour` or `perDay`: the current UTC hour or day.'),
  limit: z
    .object({ usd: z.number().optional(), tokens: z.number().int().optional() })
    .describe('The limits configured: USD and/or tokens (input + output).'),
  spent: z
    .object({ usd: z.number(), tokens: z.number().int() })
    .describe('Spent in the current window, in this scope: priced calls’ cost, input + output tokens.'),
  resetsAt: z.string().describe('When the window ends, ISO 8601 (UTC): the spend starts again from 0.'),
  exceeded: z
    .boolean()
    .describe('A limit is reached: new requests in the scope get 429 `budget_exceeded`, queued runs wait.'),
});

const BudgetsAnswer = z.object({ budgets: z.array(BudgetView) });

const BUDGETS = {
  summary: 'Budgets and their spend',
  description:
    'Each configured budget in its current UTC hour or day: its limit, what its scope spent there, when the ' +
    'window resets and whether it is exceeded (docs/budgets.md). Empty without `budgets`.',
  tags: ['usage'],
  security: ADMIN_SECURITY,
  response: { 200: BudgetsAnswer, 401: ErrorAnswer },
};

export function budgetView(state: BudgetState): z.infer<typeof BudgetView> {
  return {
    id: state.id,
    scope: state.scope,
    window: state.window,
    limit: state.limit,
    spent: state.spent,
    resetsAt: new Date(state.resetsAt).toISOString(),
    exceeded: state.exceeded,
  };
}

export function registerBudgetRoutes(
  app: FastifyInstance,
  deps: { budgets: Pick<BudgetBook, 'refresh' | 'states'> | undefined },
): void {
  app.withTypeProvider<ZodTypeProvider>().get('/api/budgets', { schema: BUDGETS }, async () => {
    const { budgets } = deps;
    if (!budgets) return { budgets: [] };
    // Read now, not as the book last saw it (a store that cannot answer is the usual 503).
    await budgets.refresh({ strict: true });
    return { budgets: budgets.states().map(budgetView) };
  });
}
