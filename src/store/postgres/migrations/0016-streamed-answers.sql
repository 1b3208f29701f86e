-- Streamed answers (docs/callers.md, "Streamed answers"): whether the run was accepted with
-- `Accept: text/event-stream`, so the worker asks the model for a streamed answer and publishes
-- its pieces. A constant default is kept in the catalog: no row is rewritten.

ALTER TABLE runs ADD COLUMN stream BOOLEAN NOT NULL DEFAULT false;
