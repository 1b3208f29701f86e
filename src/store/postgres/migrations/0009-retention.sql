-- Retention (docs/operating.md "Retention") deletes the oldest first by each kind's age,
-- through an index (runs: runs_finished, from the first step), in small batches by key,
-- so a batch reads about as many entries as it deletes and autovacuum keeps up.

CREATE INDEX events_consumed ON events (consumed_at) WHERE status = 'consumed';
CREATE INDEX heartbeats_by_age ON heartbeats (finished_at);
CREATE INDEX transcripts_by_age ON transcripts (ts);
