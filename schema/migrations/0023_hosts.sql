-- Hosts and their leases (docs/architecture.md "Hosts and leases"): one row per host, taken by the
-- node that drives the host's machines. `epoch` is bumped on each takeover and fences the writes of
-- any node that held it before. Times in milliseconds, as everywhere.
CREATE TABLE hosts (
  host_id TEXT PRIMARY KEY,
  internal_url TEXT NOT NULL,
  capacity INTEGER,
  version TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  lease_expires_at INTEGER NOT NULL,
  node_pid INTEGER NOT NULL,
  started_at INTEGER NOT NULL
) WITHOUT ROWID;

-- The host that holds the machine's disk. NULL on rows from before hosts: the first node that
-- starts takes them (an upgraded single host keeps its machines).
ALTER TABLE machines ADD COLUMN host_id TEXT;

CREATE INDEX machines_host ON machines (host_id, projected_state);
