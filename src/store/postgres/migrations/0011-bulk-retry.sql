-- Bulk retry (docs/operating.md, "Bulk retry"): failed and timed-out runs by status and
-- finish time, oldest first, and whether a run was retried already — a lookup by retry_of,
-- through an index holding the retries only.

CREATE INDEX runs_retryable ON runs (status, finished_at, seq) WHERE status IN ('failed', 'timed_out');
CREATE INDEX runs_by_retry_of ON runs (retry_of) WHERE retry_of IS NOT NULL;
