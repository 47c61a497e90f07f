-- One idempotency mechanism for every accepting route: a key is scoped to the organization (api.md),
-- so the agent routes' keys move into idempotency_keys, whose record now names an operation or an
-- agent turn (and, for a steer or interrupt, its input). operation_id loses NOT NULL, which SQLite
-- can only do by rebuilding the table.
CREATE TABLE idempotency_keys_merged (
  organization_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  operation_id TEXT,
  turn_id TEXT,
  input_id TEXT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (organization_id, idempotency_key),
  CHECK ((operation_id IS NULL) <> (turn_id IS NULL))
);
INSERT INTO idempotency_keys_merged (organization_id, idempotency_key, fingerprint, operation_id, created_at)
  SELECT organization_id, idempotency_key, fingerprint, operation_id, created_at FROM idempotency_keys;
-- A key used on both sides while they were apart keeps its operation.
INSERT INTO idempotency_keys_merged (organization_id, idempotency_key, fingerprint, turn_id, input_id, created_at)
  SELECT a.organization_id, a.idempotency_key, a.fingerprint, a.turn_id, a.input_id, a.created_at
  FROM agent_idempotency_keys a
  WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys k
    WHERE k.organization_id = a.organization_id AND k.idempotency_key = a.idempotency_key);
DROP TABLE agent_idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_merged RENAME TO idempotency_keys;
-- Housekeeping (src/runtime/Housekeeping.ts) deletes keys by age.
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
