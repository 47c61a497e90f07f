-- The audit log: every operator action (suspend, resume, resolve a flag, credits, grants) and the
-- security events of an organization (a device code denied), each written in the same
-- transaction as the action it records.
CREATE TABLE audit_log (
  id TEXT PRIMARY KEY,
  at BIGINT NOT NULL,
  -- Who acted: the operator's given name for operator routes, a user id otherwise.
  actor TEXT NOT NULL,
  -- operator | user
  actor_kind TEXT NOT NULL,
  action TEXT NOT NULL,
  organization_id TEXT,
  reason TEXT,
  -- Anything else the action names, as JSON (counts, amounts, the flag's id).
  detail TEXT NOT NULL
);
CREATE INDEX audit_log_by_time ON audit_log (at, id);
CREATE INDEX audit_log_by_organization ON audit_log (organization_id, at, id);
