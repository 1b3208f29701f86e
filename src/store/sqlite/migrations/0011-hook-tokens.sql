-- Hook tokens (docs/senders.md) — the id of the token that accepted each run and event
-- (null when none did: a retry, or one accepted before this step), and the run list's filter
-- by token newest first through an index of its own, like runs_by_source. Runs without a
-- token are not in it.

ALTER TABLE runs ADD COLUMN token_id TEXT;
ALTER TABLE events ADD COLUMN token_id TEXT;
CREATE INDEX runs_by_token ON runs (token_id, seq) WHERE token_id IS NOT NULL;
