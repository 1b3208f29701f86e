-- Agent runs execute — transcripts, last delivery routes, heartbeats, run queue lookups.

CREATE INDEX runs_active_by_session ON runs (session_key, seq) WHERE status IN ('queued', 'running');

CREATE TABLE transcripts (
  seq         INTEGER PRIMARY KEY,
  session_key TEXT NOT NULL,
  role        TEXT NOT NULL,
  content     TEXT NOT NULL,
  run_id      TEXT,
  ts          INTEGER NOT NULL
);
CREATE INDEX transcripts_by_session ON transcripts (session_key, seq);

CREATE TABLE routes (
  session_key TEXT PRIMARY KEY,
  channel     TEXT NOT NULL,
  recipient   TEXT NOT NULL,
  updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE heartbeats (
  seq              INTEGER PRIMARY KEY,
  id               TEXT NOT NULL UNIQUE,
  session_key      TEXT NOT NULL,
  started_at       INTEGER NOT NULL,
  finished_at      INTEGER NOT NULL,
  status           TEXT NOT NULL,
  event_count      INTEGER NOT NULL,
  reply            TEXT,
  error            TEXT,
  delivery_status  TEXT NOT NULL,
  delivery_channel TEXT,
  delivery_to      TEXT,
  delivery_reason  TEXT
);
CREATE INDEX heartbeats_by_session ON heartbeats (session_key, seq);
