/**
 * Schema versions of the PostgreSQL store, applied in order by `agentgate run`
 * itself and recorded in `schema_migrations`. Never edit a released step;
 * append a new one.
 *
 * Several replicas may start at the same moment: the whole migration runs in one
 * transaction holding a transaction-level advisory lock, so exactly one replica
 * applies each step and the others wait, then find nothing left to do.
 */
import type { PoolClient } from 'pg';

/** Arbitrary constant naming agentgate's migration lock among other advisory locks. */
export const MIGRATION_LOCK_KEY = 0x61676774; // "aggt"

export const MIGRATIONS: readonly string[] = [
  `
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
  `,
  // 2: one heartbeat at a time per main session across replicas; finished outbox rows pruned by age.
  `
  CREATE TABLE heartbeat_leases (
    session_key TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    lease_until BIGINT NOT NULL
  );
  CREATE INDEX deliveries_finished ON deliveries (updated_at) WHERE status <> 'pending';
  `,
  // 3: run queue heads — the oldest unfinished run of each session key, so a claim reads a
  // few head rows instead of scanning the backlog (measured: 39 ms per claim at 40 000 queued).
  `
  CREATE TABLE run_heads (
    session_key TEXT PRIMARY KEY,
    seq         BIGINT NOT NULL
  );
  CREATE INDEX run_heads_by_seq ON run_heads (seq);
  INSERT INTO run_heads (session_key, seq)
    SELECT session_key, MIN(seq) FROM runs WHERE status IN ('queued', 'running') GROUP BY session_key;
  `,
  // 4: the auth-failure lockout counted across replicas: recent failure times per address
  // key (IPv6 by /64) and the end of its lock (0 when not locked).
  `
  CREATE TABLE auth_failures (
    address_key  TEXT PRIMARY KEY,
    failures     BIGINT[] NOT NULL,
    locked_until BIGINT NOT NULL DEFAULT 0
  );
  CREATE INDEX auth_failures_locked ON auth_failures (locked_until) WHERE locked_until > 0;
  `,
  // Completion callbacks (docs/callers.md, "Completion callbacks"): their durable outbox,
  // leased per attempt so one replica sends each, and their state on the run for RunView.
  // 'waiting' until the run's result is final.
  `
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
  `,
  // Fair claiming between hooks (docs/callers.md, "Per-hook limits"): each head carries its
  // run's source, so a claim
  // reads the oldest heads of every source without walking a flooded source's backlog.
  `
  ALTER TABLE run_heads ADD COLUMN source TEXT NOT NULL DEFAULT '';
  UPDATE run_heads h SET source = r.source FROM runs r WHERE r.seq = h.seq;
  CREATE INDEX run_heads_by_source ON run_heads (source, seq);
  `,
  // The operators' API (docs/operating.md, "Admin API"): a retry names the run it retries;
  // the lists read newest
  // first by seq through an index for each filter (failed and timed-out runs, a source,
  // failed deliveries), and a redelivery finds a run's outbox items by its id.
  `
  ALTER TABLE runs ADD COLUMN retry_of TEXT;
  CREATE INDEX runs_failed ON runs (seq) WHERE status IN ('failed', 'timed_out');
  CREATE INDEX runs_by_source ON runs (source, seq);
  CREATE INDEX deliveries_failed ON deliveries (seq) WHERE status IN ('failed', 'skipped');
  CREATE INDEX deliveries_by_ref ON deliveries (ref_id, seq);
  `,
  // Fair claiming counts the runs executing per source on every claim; without this small
  // index (running runs only) that count would read every run ever made.
  `
  CREATE INDEX runs_running ON runs (source) WHERE status = 'running';
  `,
  // Retention (docs/operating.md "Retention") deletes the oldest first by each kind's age,
  // through an index (runs: runs_finished, from the first step), in small batches by key,
  // so a batch reads about as many entries as it deletes and autovacuum keeps up.
  `
  CREATE INDEX events_consumed ON events (consumed_at) WHERE status = 'consumed';
  CREATE INDEX heartbeats_by_age ON heartbeats (finished_at);
  CREATE INDEX transcripts_by_age ON transcripts (ts);
  `,
  // Hook tokens (docs/senders.md): the id of the token that accepted each run and event (null
  // when none did: a retry, or one accepted before this step), and the run list's filter by
  // token newest first through an index of its own, like runs_by_source. Runs without a token
  // are not in it. Adding a nullable column without a default rewrites no rows.
  `
  ALTER TABLE runs ADD COLUMN token_id TEXT;
  ALTER TABLE events ADD COLUMN token_id TEXT;
  CREATE INDEX runs_by_token ON runs (token_id, seq) WHERE token_id IS NOT NULL;
  `,
  // Bulk retry (docs/operating.md, "Bulk retry"): failed and timed-out runs by status and
  // finish time, oldest first, and whether a run was retried already — a lookup by retry_of,
  // through an index holding the retries only.
  `
  CREATE INDEX runs_retryable ON runs (status, finished_at, seq) WHERE status IN ('failed', 'timed_out');
  CREATE INDEX runs_by_retry_of ON runs (retry_of) WHERE retry_of IS NOT NULL;
  `,
  // Tracing (docs/tracing.md): the W3C traceparent of the hook request that accepted each run and
  // event, so the worker continues that trace; null when tracing was off (and for everything
  // accepted before this step). Adding a nullable column without a default rewrites no rows.
  `
  ALTER TABLE runs ADD COLUMN trace_parent TEXT;
  ALTER TABLE events ADD COLUMN trace_parent TEXT;
  `,
  // Tracing past the run (docs/tracing.md): the traceparent of the run's (or heartbeat's) span on
  // its reply's delivery and on its callback, which continue that trace.
  `
  ALTER TABLE deliveries ADD COLUMN trace_parent TEXT;
  ALTER TABLE callbacks ADD COLUMN trace_parent TEXT;
  `,
  // Attachments (docs/attachments.md): the files given with a run, committed with it — their bytes
  // in a table of their own, read only by the worker and the dashboard, and their names, types and
  // sizes as JSON text on the run, so every RunView still reads one row (null for none).
  `
  ALTER TABLE runs ADD COLUMN attachments TEXT;
  CREATE TABLE run_attachments (
    run_id     TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    name       TEXT NOT NULL,
    media_type TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    data       BYTEA NOT NULL,
    PRIMARY KEY (run_id, idx)
  );
  `,
  // Alerts (docs/alerts.md): an alert message is an outbox row of kind 'alert' with the failure it
  // reports (run.failed, delivery.failed, callback.failed; 'summary' for the hour's summary).
  // The cap counts the last hour's alert messages through deliveries_alerts (exactly
  // store/rules/alerts.ts's COUNTED_ALERTS), and the summary finds the suppressed ones through
  // deliveries_suppressed. Adding a nullable column without a default rewrites no rows.
  `
  ALTER TABLE deliveries ADD COLUMN alert_event TEXT;
  CREATE INDEX deliveries_alerts ON deliveries (created_at)
    WHERE kind = 'alert' AND alert_event <> 'summary' AND status NOT IN ('suppressed', 'summarized');
  CREATE INDEX deliveries_suppressed ON deliveries (created_at) WHERE status = 'suppressed';
  `,
  // Streamed answers (docs/callers.md, "Streamed answers"): whether the run was accepted with
  // `Accept: text/event-stream`, so the worker asks the model for a streamed answer and publishes
  // its pieces. A constant default is kept in the catalog: no row is rewritten.
  `
  ALTER TABLE runs ADD COLUMN stream BOOLEAN NOT NULL DEFAULT false;
  `,
];

/** Applies the missing steps, each recorded in schema_migrations, under the migration lock. */
export async function migrate(client: PoolClient): Promise<number> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
    );
    const { rows } = await client.query<{ version: number | null }>(
      'SELECT MAX(version) AS version FROM schema_migrations',
    );
    const current = rows[0]?.version ?? 0;
    for (let version = current; version < MIGRATIONS.length; version++) {
      await client.query(MIGRATIONS[version] as string);
      await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version + 1]);
    }
    await client.query('COMMIT');
    return MIGRATIONS.length - current;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
