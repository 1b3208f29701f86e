-- Streamed answers (docs/callers.md, "Streamed answers") — whether the run was accepted
-- with `Accept: text/event-stream`, so the worker asks the model for a streamed answer and
-- publishes its pieces; 0 for every run before this step.

ALTER TABLE runs ADD COLUMN stream INTEGER NOT NULL DEFAULT 0;
