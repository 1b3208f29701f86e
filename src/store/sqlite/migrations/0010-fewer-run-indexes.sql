-- Fewer index pages written with every run (docs/architecture.md, "What a run costs
-- the store"): the active runs' two indexes become one, by session key with the status
-- (a lease rewrote entries in two places of runs_active), and retention finds a finished
-- run's head by its key.

DROP INDEX runs_active;
DROP INDEX runs_active_by_session;
CREATE INDEX runs_active_by_session ON runs (session_key, seq, status) WHERE status IN ('queued', 'running');
DROP INDEX run_heads_by_seq;
