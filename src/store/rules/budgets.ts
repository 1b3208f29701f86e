/**
 * Budgets' spend as both drivers store it (docs/budgets.md), written once: which window an
 * instant falls in, what a run's or heartbeat's usage adds to its counters, the batch's rows
 * summed per counter (in one order, so two replicas' transactions lock the counters they share
 * in the same order and never deadlock), and the statements — the same text on both drivers,
 * only the placeholders differ.
 *
 * `budget_spend` has one row per counter (scope, window, window start) that something was
 * added to; `ends_at` (the window's end) is what retention prunes by, never a window still open.
 * `budget_alerts` has one row per budget and window whose alert was raised: its primary key is
 * what makes the alert once across replicas.
 */
import {
  BUDGET_WINDOW_MS,
  type BudgetWindow,
  type RunUsage,
  type SpendAmount,
  type SpendCounter,
} from '../types.js';

/** The start (ms since the epoch) of the UTC hour or day that `at` falls in. */
export function windowStart(window: BudgetWindow, at: number): number {
  const length = BUDGET_WINDOW_MS[window];
  return at - (((at % length) + length) % length);
}

/** The end of the window starting at `start`: the first instant of the next one. */
export const windowEnd = (window: BudgetWindow, start: number): number => start + BUDGET_WINDOW_MS[window];

/** What a usage adds: its cost (nothing for an unpriced model) and its input + output tokens. */
export function spendOf(usage: RunUsage | undefined): SpendAmount {
  if (!usage) return { usd: 0, tokens: 0 };
  return { usd: usage.costUsd ?? 0, tokens: usage.inputTokens + usage.outputTokens };
}

/** One counter's addition, as a driver writes it. */
export interface SpendRow extends SpendCounter, SpendAmount {
  /** `windowEnd` of the counter: retention's age column. */
  endsAt: number;
}

/** Something that adds to counters: a recorded completion, a heartbeat. */
export interface Spending {
  spend?: readonly SpendCounter[];
  usage?: RunUsage;
}

const counterKey = (c: SpendCounter) => `${c.window}\u0000${c.start}\u0000${c.scope}`;

/**
 * The rows these add, one per counter (summed), in counter order; none for a usage of nothing
 * (no call reported any) — no budgets, no write at all.
 */
export function planSpend(items: readonly Spending[]): SpendRow[] {
  const rows = new Map<string, SpendRow>();
  for (const item of items) {
    if (!item.spend || item.spend.length === 0) continue;
    const amount = spendOf(item.usage);
    if (amount.usd === 0 && amount.tokens === 0) continue;
    for (const counter of item.spend) {
      const key = counterKey(counter);
      const row = rows.get(key);
      if (row) {
        row.usd += amount.usd;
        row.tokens += amount.tokens;
      } else rows.set(key, { ...counter, endsAt: windowEnd(counter.window, counter.start), ...amount });
    }
  }
  return [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

/**
 * Each item's additions, one per counter, not summed: for a statement that adds only those of
 * the completions whose lease held (PostgreSQL's fenced update), summing them itself.
 */
export function spendEntries<T extends Spending & { runId: string }>(
  items: readonly T[],
): { runId: string; row: SpendRow }[] {
  return items.flatMap((item) => planSpend([item]).map((row) => ({ runId: item.runId, row })));
}

/**
 * The order in which PostgreSQL's statements add to counters (byte order, whatever the
 * database's collation): every transaction locks the rows it shares with another in the same order.
 */
export const SPEND_ORDER = 'win, start, scope COLLATE "C"';

/** `SPEND_COLUMNS`' values of a row, in order. */
export const SPEND_COLUMNS = 'scope, win, start, ends_at, usd, tokens';
export const spendValues = (row: SpendRow): unknown[] => [
  row.scope,
  row.window,
  row.start,
  row.endsAt,
  row.usd,
  row.tokens,
];

/** What an insert of `SPEND_COLUMNS` does when its counter has a row: adds to it. */
export const SPEND_ADD = `ON CONFLICT (scope, win, start) DO UPDATE
  SET usd = budget_spend.usd + excluded.usd, tokens = budget_spend.tokens + excluded.tokens`;

/** A counter's row as both drivers read it (PostgreSQL's BIGINT comes as text). */
export interface SpendRowRead {
  scope: string;
  win: string;
  start: number | string;
  usd: number | string;
  tokens: number | string;
}

/** Each counter's amount from the rows read, in the counters' order; zeros for one without a row. */
export function amountsOf(counters: readonly SpendCounter[], rows: readonly SpendRowRead[]): SpendAmount[] {
  const read = new Map(
    rows.map((row) => [
      counterKey({ scope: row.scope, window: row.win as BudgetWindow, start: Number(row.start) }),
      { usd: Number(row.usd), tokens: Number(row.tokens) },
    ]),
  );
  return counters.map((c) => read.get(counterKey(c)) ?? { usd: 0, tokens: 0 });
}

/** Spend rows of windows that ended before `horizon` (retention): a window still open is never pruned. */
export const PRUNE_SPEND = (horizon: string) => `DELETE FROM budget_spend WHERE ends_at < ${horizon}`;
export const PRUNE_BUDGET_ALERTS = (horizon: string) =>
  `DELETE FROM budget_alerts WHERE ends_at < ${horizon}`;

/** Claims a budget's window for its alert: one row, the first time only (`budget_alerts`' key). */
export const CLAIM_BUDGET_ALERT = (p: (n: number) => string) =>
  `INSERT INTO budget_alerts (budget_id, start, ends_at) VALUES (${p(1)}, ${p(2)}, ${p(3)})
   ON CONFLICT (budget_id, start) DO NOTHING`;
