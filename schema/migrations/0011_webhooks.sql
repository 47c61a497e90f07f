-- Webhooks (api.md "Webhooks", extensions.md §9, §20): endpoints with their sealed signing secret,
-- and the outbox of deliveries, each written in the same transaction as its domain event. A
-- delivery holds the event's body, so every attempt (and every retry after a crash) sends the same
-- bytes under the same webhook-id (the event id, shared by the event's deliveries).
CREATE TABLE webhooks (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  created_by TEXT NOT NULL,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  -- The event types it follows, as a JSON array.
  events TEXT NOT NULL,
  sealed_secret TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  secret_rotated_at BIGINT
);
CREATE INDEX webhooks_by_organization ON webhooks (organization_id, id);

CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  machine_id TEXT,
  operation_id TEXT,
  body TEXT NOT NULL,
  -- pending | succeeded | failed
  status TEXT NOT NULL,
  attempt_count INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  delivered_at BIGINT,
  last_attempt_at BIGINT,
  next_attempt_at BIGINT,
  last_status_code INTEGER,
  last_error TEXT
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);
-- The sender's read: an endpoint's pending deliveries that are due.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
