-- The operators' API (docs/operating.md, "Admin API"): a retry names the run it retries;
-- the lists read newest
-- first by seq through an index for each filter (failed and timed-out runs, a source,
-- failed deliveries), and a redelivery finds a run's outbox items by its id.

ALTER TABLE runs ADD COLUMN retry_of TEXT;
CREATE INDEX runs_failed ON runs (seq) WHERE status IN ('failed', 'timed_out');
CREATE INDEX runs_by_source ON runs (source, seq);
CREATE INDEX deliveries_failed ON deliveries (seq) WHERE status IN ('failed', 'skipped');
CREATE INDEX deliveries_by_ref ON deliveries (ref_id, seq);
