-- The first schema: system events, runs, idempotency records, transcripts, last routes,
-- heartbeats and the delivery outbox.

CREATE TABLE events (
  seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id          TEXT NOT NULL UNIQUE,
  session_key TEXT NOT NULL,
  ts          BIGINT NOT NULL,
  text        TEXT NOT NULL,
  source      TEXT NOT NULL,
  wake_mode   TEXT NOT NULL,
  status      TEXT NOT NULL DEFAULT 'pending',
  consumed_at BIGINT
);
CREATE INDEX events_by_session ON events (session_key, seq);
CREATE INDEX events_pending ON events (session_key, seq) WHERE status = 'pending';

CREATE TABLE runs (
  seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id               TEXT NOT NULL UNIQUE,
  status           TEXT NOT NULL DEFAULT 'queued',
  agent_id         TEXT NOT NULL,
  session_key      TEXT NOT NULL,
  main_session_key TEXT NOT NULL,
  name             TEXT,
  message          TEXT NOT NULL,
  model            TEXT,
  thinking         TEXT,
  timeout_seconds  DOUBLE PRECISION NOT NULL,
  wake_mode        TEXT NOT NULL,
  deliver          BOOLEAN NOT NULL,
  channel          TEXT NOT NULL,
  recipient        TEXT,
  allow_unsafe     BOOLEAN NOT NULL,
  source           TEXT NOT NULL,
  created_at       BIGINT NOT NULL,
  started_at       BIGINT,
  finished_at      BIGINT,
  reply            TEXT,
  error            TEXT,
  attempts         INTEGER NOT NULL DEFAULT 0,
  lease_owner      TEXT,
  lease_until      BIGINT,
  delivery_status  TEXT NOT NULL,
  delivery_channel TEXT,
  delivery_to      TEXT,
  delivery_reason  TEXT
);
CREATE INDEX runs_active ON runs (seq) WHERE status IN ('queued', 'running');
CREATE INDEX runs_active_by_session ON runs (session_key, seq) WHERE status IN ('queued', 'running');
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE idempotency (
  scope      TEXT NOT NULL,
  key        TEXT NOT NULL,
  body_hash  TEXT NOT NULL,
  status     INTEGER NOT NULL,
  body       TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_by_age ON idempotency (created_at);

CREATE TABLE transcripts (
  seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_key TEXT NOT NULL,
  role        TEXT NOT NULL,
  content     TEXT NOT NULL,
  run_id      TEXT,
  ts          BIGINT NOT NULL
);
CREATE INDEX transcripts_by_session ON transcripts (session_key, seq);

CREATE TABLE routes (
  session_key TEXT PRIMARY KEY,
  channel     TEXT NOT NULL,
  recipient   TEXT NOT NULL,
  updated_at  BIGINT NOT NULL
);

CREATE TABLE heartbeats (
  seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id               TEXT NOT NULL UNIQUE,
  session_key      TEXT NOT NULL,
  started_at       BIGINT NOT NULL,
  finished_at      BIGINT NOT NULL,
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

CREATE TABLE deliveries (
  seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
  next_attempt_at  BIGINT NOT NULL,
  last_error       TEXT,
  lease_owner      TEXT,
  lease_until      BIGINT,
  created_at       BIGINT NOT NULL,
  updated_at       BIGINT NOT NULL
);
CREATE INDEX deliveries_pending ON deliveries (seq) WHERE status = 'pending';
