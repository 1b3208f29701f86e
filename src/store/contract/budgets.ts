/**
 * Budgets in the store (docs/budgets.md): the spend of each scope a budget limits, per UTC hour
 * or day, added to in the transaction that records a run's completion or a heartbeat (so it is
 * exact across restarts and replicas), and the one alert per budget and window.
 */
import type { AlertOutcome, NewAlert } from './alerts.js';

/** A budget's window: the UTC hour or the UTC day. */
export const BUDGET_WINDOWS = ['hour', 'day'] as const;
export type BudgetWindow = (typeof BUDGET_WINDOWS)[number];

/** Each window's length: UTC hours and days both start at a multiple of it since the epoch. */
export const BUDGET_WINDOW_MS: Record<BudgetWindow, number> = { hour: 3_600_000, day: 86_400_000 };

/**
 * One counter of spend: a scope (`all`, `hook:<id>`, `token:<id>`, `agent:<id>`) in one window,
 * named by the window's start (ms since the epoch).
 */
export interface SpendCounter {
  scope: string;
  window: BudgetWindow;
  start: number;
}

/** What a counter holds: USD (priced calls only) and tokens (input + output). */
export interface SpendAmount {
  usd: number;
  tokens: number;
}

export interface BudgetStore {
  /** The spend of each counter asked for, in that order; zeros for a counter nothing was added to. */
  readSpend(counters: readonly SpendCounter[]): Promise<SpendAmount[]>;
  /**
   * The alert of a budget exceeded in the window starting at `start`, enqueued (under the alerts'
   * hourly cap) only by the first call for that budget and window, on any replica; undefined for
   * every later one (nothing written).
   */
  alertOnce(
    budgetId: string,
    window: SpendCounter['window'],
    start: number,
    alert: NewAlert,
    now: number,
  ): Promise<AlertOutcome | undefined>;
}
