-- Identity core: users, organizations, memberships, API keys, browser sessions, email sign-in.
-- Times are integer milliseconds since the epoch (portable to PostgreSQL's BIGINT).

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL,
  last_sign_in_at BIGINT
);

CREATE TABLE organizations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE memberships (
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'operator', 'billing', 'member')),
  max_running_machines INTEGER,
  joined_at BIGINT NOT NULL,
  PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX memberships_by_user ON memberships (user_id);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL UNIQUE,
  secret_hash TEXT NOT NULL,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  created_by TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  preset TEXT NOT NULL CHECK (preset IN ('read_only', 'use_existing', 'create_and_use', 'full_access')),
  last_four TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  last_used_at BIGINT,
  revoked_at BIGINT
);
CREATE INDEX api_keys_by_organization ON api_keys (organization_id, created_at);

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  csrf_hash TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  active_organization_id TEXT REFERENCES organizations (id) ON DELETE SET NULL,
  authenticated_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  revoked_at BIGINT
);
CREATE INDEX sessions_by_user ON sessions (user_id);

CREATE TABLE email_sign_ins (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  code_hash TEXT NOT NULL,
  link_token_hash TEXT NOT NULL UNIQUE,
  state_hash TEXT NOT NULL,
  return_to TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  closed_at BIGINT,
  closed_reason TEXT
);
CREATE INDEX email_sign_ins_by_email ON email_sign_ins (email, created_at);
