-- Tracing (docs/tracing.md): the W3C traceparent of the hook request that accepted each run and
-- event, so the worker continues that trace; null when tracing was off (and for everything
-- accepted before this step). Adding a nullable column without a default rewrites no rows.

ALTER TABLE runs ADD COLUMN trace_parent TEXT;
ALTER TABLE events ADD COLUMN trace_parent TEXT;
