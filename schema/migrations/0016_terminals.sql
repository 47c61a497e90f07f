-- Terminals (docs/terminals.md): one row per ticket. A ticket is single-use and valid 60 s; only
-- its SHA-256 is stored. `opened_at` marks its one use (the WebSocket opened), `closed_at` the end
-- of that WebSocket; a row opened and not closed is an open terminal, which keeps its machine from
-- idle sleep. `revoked_at` voids an unused ticket (member removal, suspension).
CREATE TABLE terminals (
  id TEXT PRIMARY KEY,
  ticket_hash TEXT NOT NULL UNIQUE,
  organization_id TEXT NOT NULL,
  machine_id TEXT NOT NULL REFERENCES machines (id) ON DELETE CASCADE,
  created_by TEXT NOT NULL,
  width_cols INTEGER NOT NULL,
  height_rows INTEGER NOT NULL,
  -- The command as a JSON array of arguments, or null for the machine's login shell.
  command TEXT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  opened_at BIGINT,
  closed_at BIGINT,
  revoked_at BIGINT
);

CREATE INDEX terminals_open_by_machine ON terminals (machine_id) WHERE opened_at IS NOT NULL AND closed_at IS NULL;
CREATE INDEX terminals_by_organization ON terminals (organization_id, created_by);
