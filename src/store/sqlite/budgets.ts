/**
 * Budgets on SQLite (store/rules/budgets.ts, docs/budgets.md): the counters are read by their
 * key, one prepared read each (a handful per check, in-process); a budget's alert is claimed and
 * enqueued in one IMMEDIATE transaction.
 */
import type Database from 'better-sqlite3';
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
import type { SqliteTxWriter } from './tx-writer.js';

export class SqliteBudgets implements BudgetStore {
  private readonly s;
  private readonly alertOnceInTx;

  constructor(
    db: Database.Database,
    writer: Pick<SqliteTxWriter, 'enqueueAlert'>,
    private readonly signals: CommitSignals,
  ) {
    this.s = {
      counter: db.prepare<[string, string, number], SpendRowRead>(
        'SELECT scope, win, start, usd, tokens FROM budget_spend WHERE scope = ? AND win = ? AND start = ?',
      ),
      claim: db.prepare(CLAIM_BUDGET_ALERT(() => '?')),
    };
    this.alertOnceInTx = db.transaction(
      (budgetId: string, window: BudgetWindow, start: number, alert: NewAlert, now: number) => {
        const claimed = this.s.claim.run(budgetId, start, windowEnd(window, start)).changes === 1;
        return claimed ? writer.enqueueAlert(alert, now) : undefined;
      },
    );
  }

  async readSpend(counters: readonly SpendCounter[]): Promise<SpendAmount[]> {
    const rows = counters.flatMap((c) => this.s.counter.all(c.scope, c.window, c.start));
    return amountsOf(counters, rows);
  }

  async alertOnce(
    budgetId: string,
    window: BudgetWindow,
    start: number,
    alert: NewAlert,
    now: number,
  ): Promise<AlertOutcome | undefined> {
    const outcome = this.alertOnceInTx.immediate(budgetId, window, start, alert, now);
    this.signals.budgetAlerted(outcome);
    return outcome;
  }
}
