-- Fair claiming between hooks (docs/callers.md, "Per-hook limits"): each head carries its
-- run's source, so a claim
-- reads the oldest heads of every source without walking a flooded source's backlog.

ALTER TABLE run_heads ADD COLUMN source TEXT NOT NULL DEFAULT '';
UPDATE run_heads h SET source = r.source FROM runs r WHERE r.seq = h.seq;
CREATE INDEX run_heads_by_source ON run_heads (source, seq);
