-- The delivery outbox — resumable, part by part, across restarts.

CREATE TABLE deliveries (
  seq              INTEGER PRIMARY KEY,
  id               TEXT NOT NULL UNIQUE,
  kind             TEXT NOT NULL,
  ref_id           TEXT NOT NULL,
  main_session_key TEXT NOT NULL,
  channel          TEXT NOT NULL,
  recipient        TEXT,
  text             TEXT NOT NULL,
  status           TEXT NOT NULL DEFAULT 'pending',
  resolved_channel TEXT,
  resolved_to      TEXT,
  parts_sent       INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER NOT NULL,
  last_error       TEXT,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, seq) WHERE status = 'pending';
