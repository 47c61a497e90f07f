-- Environments (extensions.md §6): named, versioned sets of variables for machines. Each version's
-- variables are kept as one sealed (encrypted) JSON object, so a machine on version N boots with
-- exactly version N's values until an apply_environment operation moves it on.

CREATE TABLE environments (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  -- The names of the current version's variables, as a JSON array (names are not secret).
  variable_names TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  deleted_at BIGINT
);
CREATE INDEX environments_by_organization ON environments (organization_id, id);

CREATE TABLE environment_versions (
  environment_id TEXT NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  sealed_variables TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (environment_id, version)
);
