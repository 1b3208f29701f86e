-- Completion callbacks (docs/callers.md) — their durable outbox, and their state on the
-- run for RunView. A row is 'waiting' from the run's acceptance until its result is final.

ALTER TABLE runs ADD COLUMN callback_status TEXT NOT NULL DEFAULT 'none';
ALTER TABLE runs ADD COLUMN callback_attempts INTEGER NOT NULL DEFAULT 0;
CREATE TABLE callbacks (
  seq             INTEGER PRIMARY KEY,
  id              TEXT NOT NULL UNIQUE,
  run_id          TEXT NOT NULL UNIQUE,
  url             TEXT NOT NULL,
  status          TEXT NOT NULL DEFAULT 'waiting',
  attempts        INTEGER NOT NULL DEFAULT 0,
  armed_at        INTEGER,
  next_attempt_at INTEGER,
  body            TEXT,
  last_error      TEXT,
  lease_owner     TEXT,
  lease_until     INTEGER,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
);
CREATE INDEX callbacks_due ON callbacks (next_attempt_at, seq) WHERE status = 'pending';
CREATE INDEX callbacks_finished ON callbacks (updated_at) WHERE status IN ('delivered', 'failed');
