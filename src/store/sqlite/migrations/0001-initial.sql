-- The first schema: system events, runs and idempotency records.

CREATE TABLE events (
  seq         INTEGER PRIMARY KEY,
  id          TEXT NOT NULL UNIQUE,
  session_key TEXT NOT NULL,
  ts          INTEGER NOT NULL,
  text        TEXT NOT NULL,
  source      TEXT NOT NULL,
  wake_mode   TEXT NOT NULL,
  status      TEXT NOT NULL DEFAULT 'pending',
  consumed_at INTEGER
);
CREATE INDEX events_by_session ON events (session_key, seq);
CREATE INDEX events_pending ON events (session_key, seq) WHERE status = 'pending';

CREATE TABLE runs (
  seq              INTEGER PRIMARY KEY,
  id               TEXT NOT NULL UNIQUE,
  status           TEXT NOT NULL DEFAULT 'queued',
  agent_id         TEXT NOT NULL,
  session_key      TEXT NOT NULL,
  main_session_key TEXT NOT NULL,
  name             TEXT,
  message          TEXT NOT NULL,
  model            TEXT,
  thinking         TEXT,
  timeout_seconds  REAL NOT NULL,
  wake_mode        TEXT NOT NULL,
  deliver          INTEGER NOT NULL,
  channel          TEXT NOT NULL,
  recipient        TEXT,
  allow_unsafe     INTEGER NOT NULL,
  source           TEXT NOT NULL,
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  reply            TEXT,
  error            TEXT,
  attempts         INTEGER NOT NULL DEFAULT 0,
  lease_owner      TEXT,
  lease_until      INTEGER,
  delivery_status  TEXT NOT NULL,
  delivery_channel TEXT,
  delivery_to      TEXT,
  delivery_reason  TEXT
);
CREATE INDEX runs_active ON runs (status, seq) WHERE status IN ('queued', 'running');

CREATE TABLE idempotency (
  scope      TEXT NOT NULL,
  key        TEXT NOT NULL,
  body_hash  TEXT NOT NULL,
  status     INTEGER NOT NULL,
  body       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_by_age ON idempotency (created_at);
