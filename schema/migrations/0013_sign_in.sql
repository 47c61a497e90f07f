-- Sign-in II: identities linked to users (OIDC subjects and further e-mail addresses), the OIDC
-- sign-ins under way, e-mail codes that link an address, and the device authorization grant.
-- Every token is stored as a sha256 hash; times are integer milliseconds since the epoch.

-- A way to sign in as a user besides their own address: (provider, subject) of an OIDC provider,
-- or ('email', address) for an address linked to the user.
CREATE TABLE identities (
  provider TEXT NOT NULL,
  subject TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  email TEXT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (provider, subject)
);
CREATE INDEX identities_by_user ON identities (user_id);

-- An OIDC sign-in between GET /v1/auth/login and its callback: single use, ten minutes, bound to
-- the browser that started it (the hash of its svc_oidc cookie). PKCE verifier and nonce are
-- derived from that cookie and the state, so neither is stored.
CREATE TABLE oidc_sign_ins (
  id TEXT PRIMARY KEY,
  state_hash TEXT NOT NULL UNIQUE,
  browser_hash TEXT NOT NULL,
  provider TEXT NOT NULL,
  return_to TEXT NOT NULL,
  -- Set when a signed-in user links this provider: the callback links instead of signing in.
  link_user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX oidc_sign_ins_by_expiry ON oidc_sign_ins (expires_at);

-- A code from POST /v1/auth/link/email links its address to this user instead of signing in.
ALTER TABLE email_sign_ins ADD COLUMN link_user_id TEXT REFERENCES users (id) ON DELETE CASCADE;

-- RFC 8628: a device's request, decided by a signed-in user, answered to the device once.
CREATE TABLE device_authorizations (
  id TEXT PRIMARY KEY,
  device_code_hash TEXT NOT NULL UNIQUE,
  user_code_hash TEXT NOT NULL UNIQUE,
  client_name TEXT NOT NULL,
  requested_scope TEXT NOT NULL,
  -- pending | approved | denied | issued (the key was answered); expiry is read from expires_at.
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'issued')),
  interval_seconds INTEGER NOT NULL,
  last_polled_at BIGINT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  decided_by TEXT REFERENCES users (id) ON DELETE CASCADE,
  decided_at BIGINT,
  organization_id TEXT REFERENCES organizations (id) ON DELETE CASCADE,
  preset TEXT CHECK (preset IN ('read_only', 'use_existing', 'create_and_use', 'full_access')),
  key_name TEXT,
  key_expires_in_days INTEGER,
  api_key_id TEXT
);
CREATE INDEX device_authorizations_by_expiry ON device_authorizations (expires_at);
