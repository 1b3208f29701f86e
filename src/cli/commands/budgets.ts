/**
 * `agentgate budgets` over the admin API (docs/budgets.md, "`GET /api/budgets`"): each budget in
 * its current UTC hour or day — scope, spend against limit, when it resets, whether it is spent —
 * as a table. Ids and scopes come from the config: printed with control characters made visible.
 */
import { GatewayClient } from '../admin-client.js';
import { CliError } from '../cli-error.js';
import { printJson, table, visible } from '../format.js';
import { resolveTarget, type TargetOptions } from '../gateway-target.js';
import type { CliIo } from '../io.js';

export interface BudgetsOptions extends TargetOptions {
  json?: boolean;
}

/** A budget as the CLI reads it. */
interface BudgetRow {
  id: string;
  scope: string;
  window: 'hour' | 'day';
  limit: { usd?: number; tokens?: number };
  spent: { usd: number; tokens: number };
  resetsAt: string;
  exceeded: boolean;
}

const dollars = (usd: number) => (usd >= 0.01 || usd === 0 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`);
const count = (n: number) => n.toLocaleString('en-US');

function spentOf(row: BudgetRow): string {
  const parts: string[] = [];
  if (row.limit.usd !== undefined) parts.push(`${dollars(row.spent.usd)} / ${dollars(row.limit.usd)}`);
  if (row.limit.tokens !== undefined)
    parts.push(`${count(row.spent.tokens)} / ${count(row.limit.tokens)} tokens`);
  return parts.join(', ');
}

export async function budgetsCommand(io: CliIo, options: BudgetsOptions): Promise<void> {
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const answer = await client.expectOk({ path: '/api/budgets', auth: 'admin' });
  if (options.json) return printJson(io, answer);
  if (!Array.isArray(answer.budgets)) throw new CliError('the gateway answered without budgets');
  const rows = answer.budgets as BudgetRow[];
  if (rows.length === 0) {
    io.console.log('no budgets configured (docs/budgets.md)');
    return;
  }
  io.console.log(
    table(
      ['BUDGET', 'SCOPE', 'WINDOW', 'SPENT / LIMIT', 'RESETS', 'STATE'],
      rows.map((row) => [
        visible(row.id),
        visible(row.scope),
        row.window,
        spentOf(row),
        row.resetsAt,
        row.exceeded ? 'spent' : 'ok',
      ]),
    ),
  );
}
