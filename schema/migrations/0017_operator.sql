-- The operator's controls (docs/operators.md): suspended organizations and the abuse guard's flags.
-- A suspension is a row while it lasts; resume removes it (the audit log keeps the history).
CREATE TABLE organization_suspensions (
  organization_id TEXT PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  operator TEXT NOT NULL,
  reason TEXT NOT NULL,
  suspended_at BIGINT NOT NULL
);

-- A flag is written in the same transaction as the stop operation it names.
CREATE TABLE abuse_flags (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  machine_id TEXT NOT NULL,
  stop_operation_id TEXT NOT NULL,
  -- sustained_cpu
  kind TEXT NOT NULL,
  -- stopped
  action TEXT NOT NULL,
  min_cpu_permille INTEGER NOT NULL,
  window_seconds INTEGER NOT NULL,
  window_start BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  -- null while open; dismissed | confirmed once resolved
  resolution TEXT,
  resolution_note TEXT,
  resolved_by TEXT,
  resolved_at BIGINT
);
CREATE INDEX abuse_flags_by_resolution ON abuse_flags (resolution, id);
