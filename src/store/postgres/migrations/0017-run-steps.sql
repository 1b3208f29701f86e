-- Steps and approval (docs/tools.md, "Durable steps" and "Approval") — each finished model
-- call and tool call of a run's loop, committed before the loop goes on; their count on the
-- run, kept by the same transaction, so every RunView still reads one row. The JSON parts
-- (arguments, the calls asked for) are kept as the text the loop wrote.
--
-- A run waiting for an operator's decision has status 'waiting' and `waiting_for` (the
-- JSON {step, tool, arguments}); the request and its decision are kept per step in
-- run_approvals, where the resumed loop reads the decision.

ALTER TABLE runs ADD COLUMN steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN waiting_for TEXT;
ALTER TABLE runs ADD COLUMN waiting_since BIGINT;
CREATE TABLE run_steps (
  run_id      TEXT NOT NULL,
  step_index  INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  status      TEXT NOT NULL,
  tool        TEXT,
  call_id     TEXT,
  arguments   TEXT,
  result      TEXT,
  text        TEXT,
  calls       TEXT,
  started_at  BIGINT NOT NULL,
  finished_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, step_index)
);
CREATE TABLE run_approvals (
  run_id       TEXT NOT NULL,
  step_index   INTEGER NOT NULL,
  tool         TEXT NOT NULL,
  arguments    TEXT NOT NULL,
  requested_at BIGINT NOT NULL,
  decision     TEXT,
  decided_at   BIGINT,
  PRIMARY KEY (run_id, step_index)
);
-- The approval timeout's sweep reads the waiting runs only.
CREATE INDEX runs_waiting ON runs (waiting_since) WHERE status = 'waiting';
