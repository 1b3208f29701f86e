-- Attachments (docs/attachments.md): the files given with a run, committed with it — their bytes
-- in a table of their own, read only by the worker and the dashboard, and their names, types and
-- sizes as JSON text on the run, so every RunView still reads one row (null for none).

ALTER TABLE runs ADD COLUMN attachments TEXT;
CREATE TABLE run_attachments (
  run_id     TEXT NOT NULL,
  idx        INTEGER NOT NULL,
  name       TEXT NOT NULL,
  media_type TEXT NOT NULL,
  bytes      INTEGER NOT NULL,
  data       BYTEA NOT NULL,
  PRIMARY KEY (run_id, idx)
);
