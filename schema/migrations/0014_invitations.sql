-- Invitations to join an organization, and organizations that were deleted.
-- An invitation is open while accepted_at and revoked_at are null and expires_at is ahead; only a
-- hash of its single-use token is kept.
CREATE TABLE invitations (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  invited_by TEXT NOT NULL,
  -- Normalized (trimmed, lower case).
  email TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'operator', 'billing', 'member')),
  token_hash TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  accepted_at BIGINT,
  accepted_by TEXT,
  revoked_at BIGINT
);
-- The 24-hour count per organization and the pending list.
CREATE INDEX invitations_by_organization ON invitations (organization_id, created_at);
-- Sign-up asks whether an address holds an open invitation.
CREATE INDEX invitations_by_email ON invitations (email, expires_at);

-- A deleted organization keeps its row (machines, snapshots and the audit log refer to it) but has
-- no members, keys or open invitations left.
ALTER TABLE organizations ADD COLUMN deleted_at BIGINT;
-- When the deleted organization's machines, disks and snapshots were all gone (after the retention).
ALTER TABLE organizations ADD COLUMN purged_at BIGINT;
