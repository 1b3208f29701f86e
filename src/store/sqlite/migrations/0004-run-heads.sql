-- Run queue heads — the oldest unfinished run of each session key, so a
-- claim reads a few head rows instead of scanning every queued run.

CREATE TABLE run_heads (
  session_key TEXT PRIMARY KEY,
  seq         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX run_heads_by_seq ON run_heads (seq);
INSERT INTO run_heads (session_key, seq)
  SELECT session_key, MIN(seq) FROM runs WHERE status IN ('queued', 'running') GROUP BY session_key;
