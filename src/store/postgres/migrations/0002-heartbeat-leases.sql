-- One heartbeat at a time per main session across replicas; finished outbox rows pruned by age.

CREATE TABLE heartbeat_leases (
  session_key TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  lease_until BIGINT NOT NULL
);
CREATE INDEX deliveries_finished ON deliveries (updated_at) WHERE status <> 'pending';
