/**
 * Schema versions of the SQLite store, applied in order and recorded in
 * `PRAGMA user_version`. Never edit a released step; append a new one.
 */
export const MIGRATIONS: readonly string[] = [
  `
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
  `,
  // 2: agent runs execute — transcripts, last delivery routes, heartbeats, run queue lookups.
  `
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
  `,
  // 3: the delivery outbox — resumable, part by part, across restarts.
  `
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
  `,
  // 4: run queue heads — the oldest unfinished run of each session key, so a
  // claim reads a few head rows instead of scanning every queued run.
  `
  CREATE TABLE run_heads (
    session_key TEXT PRIMARY KEY,
    seq         INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX run_heads_by_seq ON run_heads (seq);
  INSERT INTO run_heads (session_key, seq)
    SELECT session_key, MIN(seq) FROM runs WHERE status IN ('queued', 'running') GROUP BY session_key;
  `,
  // 5: completion callbacks (docs/callers.md) — their durable outbox, and their state on the
  // run for RunView. A row is 'waiting' from the run's acceptance until its result is final.
  `
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
  `,
  // 6: fair claiming between hooks (docs/callers.md) — each head carries its run's source, so a
  // claim reads the oldest heads of every source without walking a flooded source's backlog.
  `
  ALTER TABLE run_heads ADD COLUMN source TEXT NOT NULL DEFAULT '';
  UPDATE run_heads SET source = COALESCE((SELECT r.source FROM runs r WHERE r.seq = run_heads.seq), '');
  CREATE INDEX run_heads_by_source ON run_heads (source, seq);
  `,
  // 7: the operators' API (docs/operating.md) — a retry names the run it retries; the lists read
  // newest first by seq through an index for each filter (failed and timed-out runs, a
  // source, failed deliveries), and a redelivery finds a run's outbox items by its id.
  `
  ALTER TABLE runs ADD COLUMN retry_of TEXT;
  CREATE INDEX runs_failed ON runs (seq) WHERE status = 'failed';
  CREATE INDEX runs_timed_out ON runs (seq) WHERE status = 'timed_out';
  CREATE INDEX runs_by_source ON runs (source, seq);
  CREATE INDEX deliveries_failed ON deliveries (seq) WHERE status IN ('failed', 'skipped');
  CREATE INDEX deliveries_by_ref ON deliveries (ref_id, seq);
  `,
  // 8: fair claiming counts the runs executing per source on every claim; without this
  // small index (running runs only) that count would read every run ever made.
  `
  CREATE INDEX runs_running ON runs (source) WHERE status = 'running';
  `,
  // 9: retention (docs/operating.md "Retention") deletes the oldest first by each kind's age,
  // through these indexes, so a batch reads about as many entries as it deletes.
  `
  CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
  CREATE INDEX events_consumed ON events (consumed_at) WHERE status = 'consumed';
  CREATE INDEX heartbeats_by_age ON heartbeats (finished_at);
  CREATE INDEX transcripts_by_age ON transcripts (ts);
  `,
  // 10: fewer index pages written with every run (docs/architecture.md, "What a run costs
  // the store"): the active runs' two indexes become one, by session key with the status
  // (a lease rewrote entries in two places of runs_active), and retention finds a finished
  // run's head by its key.
  `
  DROP INDEX runs_active;
  DROP INDEX runs_active_by_session;
  CREATE INDEX runs_active_by_session ON runs (session_key, seq, status) WHERE status IN ('queued', 'running');
  DROP INDEX run_heads_by_seq;
  `,
  // 11: hook tokens (docs/senders.md) — the id of the token that accepted each run and event
  // (null when none did: a retry, or one accepted before this step), and the run list's filter
  // by token newest first through an index of its own, like runs_by_source. Runs without a
  // token are not in it.
  `
  ALTER TABLE runs ADD COLUMN token_id TEXT;
  ALTER TABLE events ADD COLUMN token_id TEXT;
  CREATE INDEX runs_by_token ON runs (token_id, seq) WHERE token_id IS NOT NULL;
  `,
  // 12: bulk retry (docs/operating.md, "Bulk retry") — failed and timed-out runs by status and
  // finish time, oldest first (the rowid, seq, breaks ties), and whether a run was retried
  // already: a lookup by retry_of, through an index holding the retries only.
  `
  CREATE INDEX runs_retryable ON runs (status, finished_at) WHERE status IN ('failed', 'timed_out');
  CREATE INDEX runs_by_retry_of ON runs (retry_of) WHERE retry_of IS NOT NULL;
  `,
  // 13: tracing (docs/tracing.md) — the W3C traceparent of the hook request that accepted each
  // run and event, so the worker continues that trace; null when tracing was off (and for
  // everything accepted before this step).
  `
  ALTER TABLE runs ADD COLUMN trace_parent TEXT;
  ALTER TABLE events ADD COLUMN trace_parent TEXT;
  `,
  // 14: tracing past the run (docs/tracing.md) — the traceparent of the run's (or heartbeat's)
  // span on its reply's delivery and on its callback, which continue that trace.
  `
  ALTER TABLE deliveries ADD COLUMN trace_parent TEXT;
  ALTER TABLE callbacks ADD COLUMN trace_parent TEXT;
  `,
  // 15: attachments (docs/attachments.md) — the files given with a run, committed with it: their
  // bytes in a table of their own, read only by the worker and the dashboard, and their names,
  // types and sizes as JSON on the run, so every RunView still reads one row (null for none).
  `
  ALTER TABLE runs ADD COLUMN attachments TEXT;
  CREATE TABLE run_attachments (
    run_id     TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    name       TEXT NOT NULL,
    media_type TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    data       BLOB NOT NULL,
    PRIMARY KEY (run_id, idx)
  ) WITHOUT ROWID;
  `,
  // 16: alerts (docs/alerts.md) — an alert message is an outbox row of kind 'alert' with the
  // failure it reports (run.failed, delivery.failed, callback.failed; 'summary' for the hour's
  // summary). The cap counts the last hour's alert messages through deliveries_alerts (exactly
  // store/rules/alerts.ts's COUNTED_ALERTS), and the summary finds the suppressed ones through
  // deliveries_suppressed.
  `
  ALTER TABLE deliveries ADD COLUMN alert_event TEXT;
  CREATE INDEX deliveries_alerts ON deliveries (created_at)
    WHERE kind = 'alert' AND alert_event <> 'summary' AND status NOT IN ('suppressed', 'summarized');
  CREATE INDEX deliveries_suppressed ON deliveries (created_at) WHERE status = 'suppressed';
  `,
  // 17: streamed answers (docs/callers.md, "Streamed answers") — whether the run was accepted
  // with `Accept: text/event-stream`, so the worker asks the model for a streamed answer and
  // publishes its pieces; 0 for every run before this step.
  `
  ALTER TABLE runs ADD COLUMN stream INTEGER NOT NULL DEFAULT 0;
  `,
];
