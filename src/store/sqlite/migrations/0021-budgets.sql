-- Budgets (docs/budgets.md) — the hook that accepted each run (a budget's `hook` scope: a
-- mapping's id, which its source does not name), the spend of each scope a budget limits per
-- UTC hour or day (added to in the transaction that records a run's completion or a heartbeat;
-- `ends_at`, the window's end, is what retention prunes by), and the one alert per budget and
-- window (its key is what makes it once).

ALTER TABLE runs ADD COLUMN hook_id TEXT;

CREATE TABLE budget_spend (
  scope TEXT NOT NULL,
  win TEXT NOT NULL,
  start INTEGER NOT NULL,
  ends_at INTEGER NOT NULL,
  usd REAL NOT NULL DEFAULT 0,
  tokens INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, win, start)
) WITHOUT ROWID;
CREATE INDEX budget_spend_by_end ON budget_spend (ends_at);

CREATE TABLE budget_alerts (
  budget_id TEXT NOT NULL,
  start INTEGER NOT NULL,
  ends_at INTEGER NOT NULL,
  PRIMARY KEY (budget_id, start)
) WITHOUT ROWID;
CREATE INDEX budget_alerts_by_end ON budget_alerts (ends_at);
