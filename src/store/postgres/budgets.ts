/**
 * Budgets on PostgreSQL (store/rules/budgets.ts, docs/budgets.md): every replica reads the same
 * counters, in one statement for all it asks for; a budget's alert is claimed by the row of its
 * window (`budget_alerts`' key: of two replicas, one inserts it) and enqueued in that transaction.
 */
import type pg from 'pg';
import type { CommitSignals } from '../commit-signals.js';
import { amountsOf, CLAIM_BUDGET_ALERT, type SpendRowRead, windowEnd } from '../rules/budgets.js';
import type {
  AlertOutcome,
  BudgetStore,
  BudgetWindow,
  NewAlert,
  SpendAmount,
  SpendCounter,
} from '../types.js';
import { inTransaction, readPrepared } from './db.js';
import { PgTxWriter } from './tx-writer.js';

const READ_SPEND = `
  SELECT b.scope, b.win, b.start, b.usd, b.tokens
    FROM unnest($1::text[], $2::text[], $3::int8[]) AS k(scope, win, start)
    JOIN budget_spend b ON b.scope = k.scope AND b.win = k.win AND b.start = k.start`;

const CLAIM = CLAIM_BUDGET_ALERT((n) => `$${n}`);

export class PgBudgets implements BudgetStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly signals: CommitSignals,
  ) {}

  async readSpend(counters: readonly SpendCounter[]): Promise<SpendAmount[]> {
    if (counters.length === 0) return [];
    const rows = await readPrepared<SpendRowRead>(this.pool, READ_SPEND, [
      counters.map((c) => c.scope),
      counters.map((c) => c.window),
      counters.map((c) => c.start),
    ]);
    return amountsOf(counters, rows);
  }

  async alertOnce(
    budgetId: string,
    window: BudgetWindow,
    start: number,
    alert: NewAlert,
    now: number,
  ): Promise<AlertOutcome | undefined> {
    const outcome = await inTransaction(this.pool, async (tx) => {
      const claimed = await tx.query(CLAIM, [budgetId, start, windowEnd(window, start)]);
      return claimed.rowCount === 1 ? new PgTxWriter(tx).enqueueAlert(alert, now) : undefined;
    });
    this.signals.budgetAlerted(outcome);
    return outcome;
  }
}
