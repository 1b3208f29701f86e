-- Runs put back in the queue until a time (docs/agent-runs.md, "Provider limits"): a claim
-- never takes a queued run whose not_before (ms since the epoch) is still ahead, and held_ms
-- counts how long the run has been held back so, in all, against its timeout. The index finds
-- the runs waiting so, few at any time, for the claim and the worker's wake-up.

ALTER TABLE runs ADD COLUMN not_before BIGINT;
ALTER TABLE runs ADD COLUMN held_ms BIGINT NOT NULL DEFAULT 0;
CREATE INDEX runs_deferred ON runs (not_before) WHERE status = 'queued' AND not_before IS NOT NULL;
