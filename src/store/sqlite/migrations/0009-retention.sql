-- Retention (docs/operating.md "Retention") deletes the oldest first by each kind's age,
-- through these indexes, so a batch reads about as many entries as it deletes.

CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX events_consumed ON events (consumed_at) WHERE status = 'consumed';
CREATE INDEX heartbeats_by_age ON heartbeats (finished_at);
CREATE INDEX transcripts_by_age ON transcripts (ts);
