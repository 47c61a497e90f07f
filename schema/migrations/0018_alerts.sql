-- E-mail alerts (extensions §19). Who asked for an operation, so an alert can go to them; rows
-- accepted before this migration have none (no operation_failed alert for them).
ALTER TABLE operations ADD COLUMN requested_by TEXT;

-- A member's choices per alert type; a type without a row follows its default.
CREATE TABLE notification_preferences (
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  type TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (organization_id, user_id, type)
);

-- The alerts' outbox: one row per cause and recipient, written in the cause's transaction. The
-- sender mails a member's pending rows of one type and machine together, at most once per window.
CREATE TABLE alerts (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  type TEXT NOT NULL,
  machine_id TEXT NOT NULL,
  operation_id TEXT,
  -- One line saying what happened, written with the cause.
  summary TEXT NOT NULL,
  -- pending | sent | dropped (the member turned the type off or left before it was sent)
  status TEXT NOT NULL,
  attempt_count INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  sent_at BIGINT,
  last_error TEXT
);
-- The sender's read: what is due.
CREATE INDEX alerts_due ON alerts (next_attempt_at) WHERE status = 'pending';
-- The coalescing window: when the member last got this type for this machine.
CREATE INDEX alerts_by_key ON alerts (organization_id, user_id, type, machine_id, sent_at);
