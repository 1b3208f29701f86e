-- Usage and cost (docs/usage.md) — every model call's tokens, summed, on the run's and the
-- heartbeat's own row (written with the run's completion, the heartbeat's record), so every
-- RunView still reads one row; the model that made them (alias-resolved) and their cost at
-- its price then, null when it had none. A tool loop's model step keeps its own call's tokens,
-- so a run resumed after a crash still counts the calls an earlier attempt made.

ALTER TABLE runs ADD COLUMN usage_model TEXT;
ALTER TABLE runs ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cost_usd REAL;
ALTER TABLE heartbeats ADD COLUMN usage_model TEXT;
ALTER TABLE heartbeats ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE heartbeats ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE heartbeats ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE heartbeats ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE heartbeats ADD COLUMN cost_usd REAL;
ALTER TABLE run_steps ADD COLUMN input_tokens INTEGER;
ALTER TABLE run_steps ADD COLUMN output_tokens INTEGER;
ALTER TABLE run_steps ADD COLUMN cache_read_tokens INTEGER;
ALTER TABLE run_steps ADD COLUMN cache_write_tokens INTEGER;
