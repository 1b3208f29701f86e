-- The auth-failure lockout counted across replicas: recent failure times per address
-- key (IPv6 by /64) and the end of its lock (0 when not locked).

CREATE TABLE auth_failures (
  address_key  TEXT PRIMARY KEY,
  failures     BIGINT[] NOT NULL,
  locked_until BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX auth_failures_locked ON auth_failures (locked_until) WHERE locked_until > 0;
