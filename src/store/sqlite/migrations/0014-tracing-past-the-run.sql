-- Tracing past the run (docs/tracing.md) — the traceparent of the run's (or heartbeat's)
-- span on its reply's delivery and on its callback, which continue that trace.

ALTER TABLE deliveries ADD COLUMN trace_parent TEXT;
ALTER TABLE callbacks ADD COLUMN trace_parent TEXT;
