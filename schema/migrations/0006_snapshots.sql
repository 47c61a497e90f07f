-- Snapshots and templates (api.md "Snapshots and templates"). A row is the product's view of a
-- snapshot; its files live in the store under <data dir>/snapshots (docs/snapshots.md). A row is
-- `ready` only once its manifest is durable in the store. Templates are snapshots with a `name`
-- (unique among the organization's templates that did not fail) and no `source`.
CREATE TABLE snapshots (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  machine_id TEXT NOT NULL REFERENCES machines (id) ON DELETE CASCADE,
  operation_id TEXT NOT NULL UNIQUE,
  name TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
  tier TEXT NOT NULL CHECK (tier IN ('warm', 'cold')),
  source TEXT CHECK (source IN ('api', 'automatic')),
  size_bytes INTEGER NOT NULL DEFAULT 0,
  uploaded_bytes INTEGER NOT NULL DEFAULT 0,
  generation INTEGER NOT NULL DEFAULT 0,
  disk_synced INTEGER NOT NULL DEFAULT 0,
  manifest TEXT,
  parent_manifest TEXT,
  error_code TEXT,
  created_at BIGINT NOT NULL,
  completed_at BIGINT
);
CREATE INDEX snapshots_by_machine ON snapshots (machine_id, id);
-- A template save that failed frees its name.
CREATE UNIQUE INDEX snapshots_template_name ON snapshots (organization_id, name)
  WHERE name IS NOT NULL AND status <> 'failed';

-- Automatic snapshots: when set, a machine stopped by auto_stop or idle_sleep is snapshotted, and
-- only the newest this many automatic snapshots of it are kept.
ALTER TABLE machines ADD COLUMN auto_snapshot_keep INTEGER;
