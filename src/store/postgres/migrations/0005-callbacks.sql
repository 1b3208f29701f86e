-- Completion callbacks (docs/callers.md, "Completion callbacks"): their durable outbox,
-- leased per attempt so one replica sends each, and their state on the run for RunView.
-- 'waiting' until the run's result is final.

ALTER TABLE runs ADD COLUMN callback_status TEXT NOT NULL DEFAULT 'none';
ALTER TABLE runs ADD COLUMN callback_attempts INTEGER NOT NULL DEFAULT 0;
CREATE TABLE callbacks (
  seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id              TEXT NOT NULL UNIQUE,
  run_id          TEXT NOT NULL UNIQUE,
  url             TEXT NOT NULL,
  status          TEXT NOT NULL DEFAULT 'waiting',
  attempts        INTEGER NOT NULL DEFAULT 0,
  armed_at        BIGINT,
  next_attempt_at BIGINT,
  body            TEXT,
  last_error      TEXT,
  lease_owner     TEXT,
  lease_until     BIGINT,
  created_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL
);
CREATE INDEX callbacks_due ON callbacks (next_attempt_at, seq) WHERE status = 'pending';
CREATE INDEX callbacks_finished ON callbacks (updated_at) WHERE status IN ('delivered', 'failed');
