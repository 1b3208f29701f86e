/**
 * The `budget.exceeded` alert (docs/alerts.md, docs/budgets.md): one message per budget and
 * window whichever replica sees it first — the store enqueues it only for the first claim of
 * that budget's window (`budgets.alertOnce`), in the same transaction.
 */
import type { Alerts } from '../alerts/alerts.js';
import type { BudgetStore } from '../store/types.js';
import type { Clock } from '../util/clock.js';
import type { BudgetState } from './book.js';

export function budgetAlerts(
  alerts: Pick<Alerts, 'forBudget' | 'recorded'>,
  store: { budgets: Pick<BudgetStore, 'alertOnce'> },
  clock: Pick<Clock, 'now'>,
): (state: BudgetState) => Promise<void> {
  return async (state) => {
    const alert = alerts.forBudget(state);
    if (!alert) return;
    const outcome = await store.budgets.alertOnce(state.id, state.window, state.start, alert, clock.now());
    alerts.recorded(alert, outcome);
  };
}
