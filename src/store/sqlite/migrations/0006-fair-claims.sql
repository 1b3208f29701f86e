-- Fair claiming between hooks (docs/callers.md) — each head carries its run's source, so a
-- claim reads the oldest heads of every source without walking a flooded source's backlog.

ALTER TABLE run_heads ADD COLUMN source TEXT NOT NULL DEFAULT '';
UPDATE run_heads SET source = COALESCE((SELECT r.source FROM runs r WHERE r.seq = run_heads.seq), '');
CREATE INDEX run_heads_by_source ON run_heads (source, seq);
